import Foundation
import Testing
import TestSupport

/// What the three programs do with flags and values a user may type: a usage error exits 64 with
/// a message, a failure at run time exits 1 with the reason, and nothing crashes.
@Suite(.timeLimit(.minutes(1)))
struct CommandLineTests {
  /// Runs a program to completion.
  func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    try runCommand(productsDirectory.appendingPathComponent(program).path, arguments, timeout: .seconds(30))
  }

  @Test(arguments: [
    ("counter", ["--timeout", "inf"], "--timeout must be a positive number of seconds"),
    ("counter", ["--timeout", "1e300"], "--timeout must be a positive number of seconds"),
    ("profile", ["--timeout", "-1"], "--timeout must be a positive number of seconds"),
    ("profile", ["--timeout", "nan"], "--timeout must be a positive number of seconds"),
    ("counter", ["--autoplay", "inf"], "--autoplay must be a positive number of seconds"),
    ("counter", ["--autoplay", "-2"], "--autoplay must be a positive number of seconds"),
    ("broker", ["--client-timeout", "1e300"], "--client-timeout must be a positive number"),
    ("broker", ["--max-value-size", "-5"], "--max-value-size must be positive"),
    ("broker", ["ping", "--timeout", "inf"], "--timeout must be a positive number of seconds"),
  ])
  func badValuesAreUsageErrors(program: String, arguments: [String], message: String) throws {
    let (status, output) = try run(program, arguments)
    #expect(status == 64, "\(program) \(arguments): \(output)")
    #expect(output.contains(message), "\(program) \(arguments): \(output)")
  }

  @Test(arguments: ["broker", "counter", "profile"])
  func versionNamesTheReleaseAndProtocol(program: String) throws {
    let (status, output) = try run(program, ["--version"])
    #expect(status == 0)
    #expect(output.hasSuffix("(protocol 1)\n"), "\(output)")
  }

  /// The flags were fine, the system refused: the reason, exit 1, and no usage text.
  @Test func brokerStartFailuresNameTheCause() async throws {
    let (running, router, _) = try await startBroker()
    defer { running.signal(SIGTERM) }
    let port = try #require(router.split(separator: ":").last.flatMap { Int($0) })

    let listenBusy = try run("broker", ["--listen", router])
    #expect(listenBusy.status == 1)
    #expect(listenBusy.output.contains("broker: error: cannot bind the listen endpoint \(router)"))

    // Its PUB endpoint is the listen port + 1, the port the running broker holds.
    let publishBusy = try run("broker", ["--listen", "tcp://127.0.0.1:\(port - 1)"])
    #expect(publishBusy.status == 1)
    #expect(
      publishBusy.output.contains(
        "broker: error: cannot bind the PUB endpoint \(router) (the listen port + 1"
      ),
      "\(publishBusy.output)"
    )

    let badData = try run("broker", ["--listen", "tcp://127.0.0.1:*", "--data", "/proc/forbidden"])
    #expect(badData.status == 1)
    #expect(
      badData.output.contains("broker: error: cannot use the data directory /proc/forbidden: "),
      "\(badData.output)"
    )
    for result in [listenBusy, publishBusy, badData] {
      #expect(!result.output.contains("Usage:"))
      #expect(!result.output.contains("NSCocoaErrorDomain"))
    }
  }

  /// `broker ping`, the compose health check: 0 while a broker answers, 1 when none does.
  @Test func brokerPingTellsWhetherTheBrokerAnswers() async throws {
    let (broker, router, _) = try await startBroker()
    let answered = try run("broker", ["ping", router])
    #expect(answered.status == 0, "\(answered.output)")
    broker.signal(SIGTERM)
    #expect(await broker.waitForExit() == 0)
    let silent = try run("broker", ["ping", router, "--timeout", "0.3"])
    #expect(silent.status == 1)
    #expect(silent.output.contains("no answer from \(router)"))
  }
}
