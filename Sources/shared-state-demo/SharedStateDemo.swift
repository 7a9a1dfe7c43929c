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

  @Option(
    help: ArgumentHelp(
      "Keep the stats in this JSON file, shared with every process that opens it.",
      valueName: "path"
    )
  )
  var statsFile: String?

  @Option(help: "After the script, wait until the shared count equals this value.")
  var waitUntilCount: Int?

  @Option(help: "Give up waiting after this many seconds.")
  var timeout: Double = 10

  @MainActor
  mutating func run() async throws {
    let commands = script.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    let actions = try commands.map(Self.action(for:))
    let stats =
      statsFile.map { Shared(wrappedValue: Stats(), .fileStorage(URL(fileURLWithPath: $0))) }
      ?? Shared(value: Stats())
    let store = Store(initialState: SharedStateFeature.State(stats: stats)) { SharedStateFeature() }
    let counter = store.scope(state: \.counter, action: \.counter)
    let profile = store.scope(state: \.profile, action: \.profile)
    let counterView = counter.observe({
      CounterLine(count: $0.stats.count, alert: $0.alert.map { String(state: $0.title) })
    }) {
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
    if let target = waitUntilCount {
      try await waitUntil(count: target, in: stats)
    }
    withExtendedLifetime((counterView, profileView, tabView)) {}
    let final = store.counter.stats
    print(
      "final   │ counter \(final.count), profile \(store.profile.stats.count) "
        + "(\(final == store.profile.stats ? "in sync" : "OUT OF SYNC"))"
    )
  }

  /// Waits for another process (through the stats file) to bring the count to `target`.
  private func waitUntil(count target: Int, in stats: Shared<Stats>) async throws {
    let timeout = self.timeout
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask {
        for await value in stats.values where value.count == target { return }
      }
      group.addTask {
        try await Task.sleep(for: .seconds(timeout))
        throw ValidationError("Timed out after \(timeout) s waiting for count \(target).")
      }
      try await group.next()
      group.cancelAll()
    }
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
    case "dismiss": return .counter(.alert(.dismiss))
    case "reset": return .profile(.resetCounterButtonTapped)
    case "counter": return .selectTab(.counter)
    case "profile": return .selectTab(.profile)
    default: throw ValidationError("Unknown command \"\(command)\" in --script.")
    }
  }
}
