public import ArgumentParser
public import CurveCommandLine
import Foundation
import SharedBroker

/// The flags the counter and profile programs share (Documentation/programs.md lists them).
public struct ProgramOptions: ParsableArguments {
  /// How to print the state.
  public enum PrintFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// A readable line.
    case text
    /// One JSON object per line: `{"count":0,"maxCount":0,"minCount":0,"numberOfCounts":0}`,
    /// with `"alert"` (the counter's prime answer) while one is shown.
    case json
  }

  /// The broker's endpoint.
  @Option(
    help: "The broker's endpoint, or several brokers' separated by commas (env SHARED_BROKER_URL).")
  public var broker =
    ProcessInfo.processInfo.environment["SHARED_BROKER_URL"] ?? "tcp://127.0.0.1:5555"

  /// The shared key.
  @Option(help: "The key of the shared statistics.")
  public var key = "stats"

  /// Commands to run instead of the interactive UI.
  // Unconditional: a script may start with "-" (a decrement), which is not a flag.
  @Option(
    parsing: .unconditional,
    help: ArgumentHelp(
      "Comma-separated commands to run once the shared value has arrived; then wait for the "
        + "broker to confirm every tap, print the final state (one line) and exit.",
      discussion: "Commands: + and - (counter), prime (counter: is the count prime?), reset "
        + "(profile), wait:MS (pause MS milliseconds), CMDxN (CMD N times, e.g. +x500). "
        + "Exits 1 if the broker cannot be reached or does not confirm every tap in time."
    )
  )
  public var script: String?

  /// The output format.
  @Option(name: .customLong("print"), help: "Print the state as text or json.")
  public var format: PrintFormat = .text

  /// The CURVE keys, if the broker wants them.
  @OptionGroup public var curve: CurveClientOptions

  /// How long to wait for the broker in script and once modes.
  // Unconditional: "--timeout -1" is a bad value, not a missing one.
  @Option(
    parsing: .unconditional,
    help: "Seconds to wait for the broker before giving up (script and once modes)."
  )
  public var timeout: Double = 10

  /// Creates the defaults.
  public init() {}

  /// Checks the values.
  public func validate() throws {
    try Self.checkSeconds(timeout, flag: "--timeout")
    guard (1...256).contains(key.utf8.count),
      !key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
    else {
      throw ValidationError("--key must be 1 to 256 bytes of UTF-8 without control characters.")
    }
    guard
      broker.split(separator: ",", omittingEmptySubsequences: false)
        .allSatisfy({ BrokerClient.isEndpoint($0) })
    else {
      throw ValidationError(
        "--broker (or SHARED_BROKER_URL) must be an endpoint such as tcp://127.0.0.1:5555, or "
          + "several separated by commas, not \"\(broker)\"."
      )
    }
  }

  /// ``timeout`` as a duration.
  public var timeoutDuration: Duration { .seconds(timeout) }

  /// The longest number of seconds a flag takes (about 31 years): beyond it a duration
  /// overflows.
  public static let maximumSeconds: Double = 1_000_000_000

  /// Checks that `seconds` is positive and at most ``maximumSeconds`` (NaN and infinity are
  /// neither).
  ///
  /// - Parameters:
  ///   - seconds: The flag's value.
  ///   - flag: The flag, for the message.
  /// - Throws: A `ValidationError` saying what the flag takes.
  public static func checkSeconds(_ seconds: Double, flag: String) throws {
    guard seconds > 0, seconds <= maximumSeconds else {
      throw ValidationError(
        "\(flag) must be a positive number of seconds, at most \(Int(maximumSeconds))."
      )
    }
  }
}
