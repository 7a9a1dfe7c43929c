import ArgumentParser
import CurveCommandLine
import MirrorApps
import SharedBroker

/// The counter program: + and − change a count mirrored through the broker to every other
/// counter and profile.
@main
struct CounterCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "counter",
    abstract: "Count, mirrored through the SharedMirror broker.",
    discussion: "Keys: + and - change the count, p checks whether it is prime, q quits.",
    version: SharedMirrorRelease.description
  )

  @OptionGroup var options: ProgramOptions

  static func main() async {
    await main(CurveClientOptions.commandLine(Array(CommandLine.arguments.dropFirst())))
  }

  @Option(parsing: .unconditional, help: "Tap + every this many seconds (for unattended demos).")
  var autoplay: Double?

  func validate() throws {
    if let autoplay { try ProgramOptions.checkSeconds(autoplay, flag: "--autoplay") }
    if autoplay != nil, options.script != nil {
      throw ValidationError("--autoplay and --script do not go together: each taps on its own.")
    }
  }

  @MainActor
  func run() async throws {
    try await Program.counter(autoplay: autoplay.map { .seconds($0) })
      .run(options)
  }
}
