import ArgumentParser
import MirrorApps

/// The counter program: + and − change a count mirrored through the broker to every other
/// counter and profile.
@main
struct CounterCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "counter",
    abstract: "Count, mirrored through the SharedMirror broker.",
    discussion: "Keys: + and - change the count, p checks whether it is prime, q quits."
  )

  @OptionGroup var options: ProgramOptions

  @Option(help: "Tap + every this many seconds (for unattended demos).")
  var autoplay: Double?

  func validate() throws {
    if let autoplay, autoplay <= 0 { throw ValidationError("--autoplay must be positive.") }
  }

  @MainActor
  func run() async throws {
    try await Program.counter(autoplay: autoplay.map { .milliseconds(Int($0 * 1_000)) })
      .run(options)
  }
}
