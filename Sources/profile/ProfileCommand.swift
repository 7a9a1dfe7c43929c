import ArgumentParser
import CurveCommandLine
import MirrorApps
import SharedBroker

/// The profile program: shows the statistics mirrored through the broker; r resets them in
/// every process.
@main
struct ProfileCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "profile",
    abstract: "Show (and reset) the statistics mirrored through the SharedMirror broker.",
    discussion: "Keys: r resets everywhere, q quits.",
    version: SharedMirrorRelease.description
  )

  @OptionGroup var options: ProgramOptions

  static func main() async {
    await main(CurveClientOptions.commandLine(Array(CommandLine.arguments.dropFirst())))
  }

  @Flag(help: "Print the current value and exit.")
  var once = false

  func validate() throws {
    if once, options.script != nil {
      throw ValidationError("--once and --script do not go together: --once only reads.")
    }
  }

  @MainActor
  func run() async throws {
    try await Program.profile.run(options, once: once)
  }
}
