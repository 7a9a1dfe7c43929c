import ArgumentParser
import CaseStudies
import Composable
import Foundation

/// Runs the SharedState case study in one process: a scripted user taps the counter and the
/// profile, and every change of what each tab shows is printed as it happens.
@main
struct SharedStateDemo: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "shared-state-demo",
    abstract: "Drive the SharedState case study (counter and profile sharing one value)."
  )

  @Option(help: "Comma-separated taps: +, -, prime, dismiss, reset, counter, profile.")
  var script = "+,+,+,prime,dismiss,-,profile,reset,counter,+"

  @MainActor
  mutating func run() async throws {
    let commands = script.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    let actions = try commands.map(Self.action(for:))
    let store = Store(initialState: SharedStateFeature.State()) { SharedStateFeature() }
    let counter = store.scope(state: \.counter, action: \.counter)
    let profile = store.scope(state: \.profile, action: \.profile)
    let counterView = counter.observe({ CounterLine(count: $0.stats.count, alert: $0.alert?.title) }) {
      print("counter │ count \($0.count)" + ($0.alert.map { "  alert: \($0)" } ?? ""))
    }
    let profileView = profile.observe(\.stats) {
      print(
        "profile │ current \($0.count)  max \($0.maxCount)  min \($0.minCount)  taps \($0.numberOfCounts)"
      )
    }
    let tabView = store.observe(\.currentTab) { print("tabs    │ \($0.rawValue)") }
    for (command, action) in zip(commands, actions) {
      print("user    │ \(command)")
      store.send(action)
    }
    withExtendedLifetime((counterView, profileView, tabView)) {}
    let stats = store.counter.stats
    print(
      "final   │ counter \(stats.count), profile \(store.profile.stats.count) "
        + "(\(stats == store.profile.stats ? "in sync" : "OUT OF SYNC"))"
    )
  }

  private struct CounterLine: Equatable {
    let count: Int
    let alert: String?
  }

  private static func action(for command: String) throws -> SharedStateFeature.Action {
    switch command {
    case "+": return .counter(.incrementButtonTapped)
    case "-": return .counter(.decrementButtonTapped)
    case "prime": return .counter(.isPrimeButtonTapped)
    case "dismiss": return .counter(.alertDismissed)
    case "reset": return .profile(.resetCounterButtonTapped)
    case "counter": return .selectTab(.counter)
    case "profile": return .selectTab(.profile)
    default: throw ValidationError("Unknown command \"\(command)\" in --script.")
    }
  }
}
