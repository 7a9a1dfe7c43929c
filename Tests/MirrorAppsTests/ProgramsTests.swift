import Foundation
import TestSupport
import Testing

/// The counter and profile executables, end to end, as separate OS processes.
@Suite(.timeLimit(.minutes(1)))
struct ProgramsTests {
  func lastLine(_ text: String) -> String {
    text.split(separator: "\n").last.map(String.init) ?? ""
  }

  @Test func twoCountersAtOnceThenProfileOnce() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    var counters: [ChildProcess] = []
    for _ in 0..<2 {
      counters.append(
        try await ChildProcess(
          "counter", ["--broker", router, "--script", "+x500", "--print", "json"])
      )
    }
    for counter in counters { #expect(await counter.waitForExit() == 0) }
    let profile = try await ChildProcess(
      "profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await profile.waitForExit() == 0)
    #expect(
      lastLine(profile.printed)
        == #"{"count":1000,"maxCount":1000,"minCount":0,"numberOfCounts":1000}"#
    )
  }

  /// Without a terminal (as the compose service runs it), the first line is the broker's value,
  /// never the initial zeros before it arrived.
  @Test func aStreamStartsWithTheSharedValue() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let writer = try await ChildProcess("counter", ["--broker", router, "--script", "+x4"])
    #expect(await writer.waitForExit() == 0)
    for _ in 0..<3 {
      let stream = try await ChildProcess("profile", ["--broker", router, "--print", "json"])
      let first = await stream.waitForOutput(containing: "\n")
      stream.signal(SIGTERM)
      #expect(await stream.waitForExit() == 0)
      #expect(
        first?.split(separator: "\n").first
          == #"{"count":4,"maxCount":4,"minCount":0,"numberOfCounts":4}"#)
    }
  }

  /// Started by a supervisor that closes stdin and stderr (CI does), the programs still work:
  /// their sockets must not take over descriptors 0 and 2.
  @Test func counterWorksWithStdinAndStderrClosed() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      [
        "-c", #"exec "$0" "$@" <&- 2>&-"#, productsDirectory.appendingPathComponent("counter").path,
        "--broker", router, "--script", "+x3", "--print", "json",
      ]
    )
    #expect(await counter.waitForExit() == 0)
    #expect(
      lastLine(counter.printed) == #"{"count":3,"maxCount":3,"minCount":0,"numberOfCounts":3}"#
    )
  }

  @Test func resetFromProfileReachesARunningCounterStartedAfterTheWrites() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let writer = try await ChildProcess("counter", ["--broker", router, "--script", "+x3"])
    #expect(await writer.waitForExit() == 0)

    // Started after the writes, it sees the current value at once.
    let watcher = try await ChildProcess("counter", ["--broker", router])
    #expect(await watcher.waitForOutput(containing: "count 3 · connected") != nil)

    let profile = try await ChildProcess("profile", ["--broker", router, "--script", "reset"])
    #expect(await profile.waitForExit() == 0)
    #expect(await watcher.waitForOutput(containing: "count 0 · connected") != nil)

    // Both programs end gracefully on SIGTERM, and on SIGHUP (their terminal closed).
    let shower = try await ChildProcess("profile", ["--broker", router])
    #expect(await shower.waitForOutput(containing: "connected") != nil)
    for (process, signal) in [(watcher, SIGTERM), (shower, SIGHUP)] {
      process.signal(signal)
      #expect(await process.waitForExit() == 0)
    }
  }

  @Test func unreachableBrokerFailsClearlyAfterTheTimeout() async throws {
    let counter = try await ChildProcess(
      "counter", ["--broker", "tcp://127.0.0.1:9", "--script", "+", "--timeout", "0.5"]
    )
    #expect(await counter.waitForExit() == 1)
    #expect(
      counter.printed.contains("counter: error: could not reach the broker at tcp://127.0.0.1:9"))
    let profile = try await ChildProcess(
      "profile", ["--broker", "tcp://127.0.0.1:9", "--once", "--timeout", "0.5"]
    )
    #expect(await profile.waitForExit() == 1)
    #expect(profile.printed.contains("could not reach the broker"))
  }

  /// A script acts on the shared value: `prime` answers for the count other processes made.
  @Test func scriptRunsOnTheSharedValueAndPrintsOneLine() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let writer = try await ChildProcess("counter", ["--broker", router, "--script", "+x7"])
    #expect(await writer.waitForExit() == 0)
    #expect(writer.printed == "count 7 · connected\n")

    let checker = try await ChildProcess("counter", ["--broker", router, "--script", "prime"])
    #expect(await checker.waitForExit() == 0)
    #expect(checker.printed == "count 7 · connected · 👍 The number 7 is prime!\n")
    // The answer is part of the JSON too.
    let answer = try await ChildProcess(
      "counter", ["--broker", router, "--script", "prime", "--print", "json"])
    #expect(await answer.waitForExit() == 0)
    #expect(
      answer.printed
        == #"{"alert":"👍 The number 7 is prime!","count":7,"maxCount":7,"minCount":0,"numberOfCounts":7}"#
        + "\n")

    let json = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x500", "--print", "json"])
    #expect(await json.waitForExit() == 0)
    #expect(
      json.printed == #"{"count":507,"maxCount":507,"minCount":0,"numberOfCounts":507}"# + "\n")
  }

  /// SIGTERM ends a script early and gracefully, as `q` ends the interactive program: its taps
  /// are confirmed and the final line is printed (the process was killed outright before).
  @Test func sigtermEndsAScriptGracefully() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x2,wait:60000", "--print", "json"])
    // Its taps are out once another program reads them, a bounded number of times.
    for _ in 0..<100 {
      let profile = try await ChildProcess(
        "profile", ["--broker", router, "--once", "--print", "json"])
      _ = await profile.waitForExit()
      if profile.printed.contains(#""count":2"#) { break }
    }
    counter.signal(SIGTERM)
    #expect(await counter.waitForExit() == 0)
    #expect(!counter.wasSignaled)
    #expect(
      counter.printed == #"{"count":2,"maxCount":2,"minCount":0,"numberOfCounts":2}"# + "\n",
      "\(counter.printed)")
  }

  @Test func badFlagsGiveUsageAndAFailingExit() async throws {
    for (program, arguments) in [
      ("counter", ["--bogus"]), ("profile", ["--timeout", "-1"]),
      ("counter", ["--script", "+,jump"]), ("profile", ["--key", ""]),
    ] {
      let process = try await ChildProcess(program, arguments)
      #expect(await process.waitForExit() == 64, "\(program) \(arguments)")
      #expect(process.printed.contains("Usage: \(program)") || process.printed.contains("Error:"))
    }
  }

  /// Another client (Python, from PROTOCOL.md) wrote `{"count":1}`, which is not the programs'
  /// four-field value: `--once` and a script fail saying so, instead of showing made-up zeros or
  /// writing over it.
  @Test func aValueThatIsNotStatsIsReportedNotShownAsZeros() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let script = repositoryFile("Scripts/protocol_client.py")
    let foreign = try await runCommand(
      "/usr/bin/python3", [script.path, router, "junk", "count", "1"])
    #expect(foreign.status == 0, "\(foreign.output)")
    for (program, arguments) in [("profile", ["--once"]), ("counter", ["--script", "+"])] {
      let run = try await ChildProcess(
        program, ["--broker", router, "--key", "junk", "--print", "json"] + arguments)
      #expect(await run.waitForExit() == 1)
      #expect(
        run.printed.contains("error: The broker's value for \"junk\" is not a Stats"),
        "\(run.printed)")
      #expect(!run.printed.contains("numberOfCounts"))
    }
  }

  /// Another client wrote a count beyond `Int`: the error names the field and the range, where
  /// Foundation alone says "not valid JSON".
  @Test func aCountBeyondIntIsReportedWithItsFieldAndRange() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let script = repositoryFile("Scripts/protocol_client.py")
    let foreign = try await runCommand(
      "/usr/bin/python3", [script.path, router, "big", "count", "9223372036854775808"])
    #expect(foreign.status == 0, "\(foreign.output)")
    let profile = try await ChildProcess("profile", ["--broker", router, "--key", "big", "--once"])
    #expect(await profile.waitForExit() == 1)
    #expect(profile.printed.contains("Path: count."), "\(profile.printed)")
    #expect(
      profile.printed.contains("9223372036854775808 is outside the range of Int ("),
      "\(profile.printed)")
    #expect(!profile.printed.contains("not valid JSON"), "\(profile.printed)")
  }

  /// A broker whose value limit is below the programs' value: the taps are lost, and the
  /// program says why rather than just "connected".
  @Test func tapsTheBrokerRefusesAreReportedWithTheReason() async throws {
    let (broker, router, _) = try await startBroker(["--max-value-size", "10"])
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+", "--timeout", "1"])
    #expect(await counter.waitForExit() == 1)
    #expect(counter.printed.contains("1 tap was not confirmed"), "\(counter.printed)")
    #expect(
      counter.printed.contains("(too-large)")
        && counter.printed.contains("exceeds the broker's limit of 10"), "\(counter.printed)")
  }

  /// A script may start with a decrement: `-` is a command there, not a flag.
  @Test func aScriptMayStartWithMinus() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "-x2,+", "--print", "json"])
    #expect(await counter.waitForExit() == 0, "\(counter.printed)")
    #expect(
      lastLine(counter.printed) == #"{"count":-1,"maxCount":0,"minCount":-2,"numberOfCounts":3}"#)
  }

  /// A running profile shows a value it cannot read as it arrives, and stops showing the error
  /// once a readable value replaces it, even though the numbers it shows do not change.
  @Test func aRunningProgramShowsAndClearsTheLoadError() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let script = repositoryFile("Scripts/protocol_client.py")
    let profile = try await ChildProcess("profile", ["--broker", router, "--key", "junk"])
    defer { profile.signal(SIGTERM) }
    #expect(
      await profile.waitForOutput(containing: "current 0 · max 0 · min 0 · taps 0 · connected")
        != nil)
    func add(_ field: String, _ delta: Int) async throws {
      let run = try await runCommand(
        "/usr/bin/python3", [script.path, router, "junk", field, "\(delta)"])
      #expect(run.status == 0, "\(run.output)")
    }
    try await add("count", 0)
    let shown = await profile.waitForOutput(containing: "is not a Stats")
    #expect(shown != nil, "\(profile.printed)")
    let mark = profile.printedCount
    for field in ["maxCount", "minCount", "numberOfCounts"] { try await add(field, 0) }
    // The same numbers, now without the error.
    let cleared = await profile.waitForOutput(
      containing: "\ncurrent 0 · max 0 · min 0 · taps 0 · connected\n", after: mark - 1
    )
    #expect(cleared != nil, "\(profile.printed)")
  }
}
