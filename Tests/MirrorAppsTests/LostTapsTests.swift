import Foundation
import TestSupport
import Testing

/// Without a terminal, what keeps the printed value from being the shared one is printed with
/// it, on stdout: taps that wait, and taps lost when the program ends. A reader of the output
/// would otherwise take the last count printed (or none) for the shared one.
@Suite(.timeLimit(.minutes(1)))
struct LostTapsTests {
  /// The lines of `output` that are JSON objects.
  func objects(_ output: String) -> [[String: Any]] {
    output.split(separator: "\n").compactMap(jsonObject)
  }

  /// A script's taps the broker never confirms (it died while holding them back) are the final
  /// object's problem, with how many and why; the count is this program's, not the shared one.
  @Test func aScriptsTapsLostWithTheBrokerAreTheFinalObjectsProblem() async throws {
    let (broker, router, data) = try await startBrokerHoldingWrites(["--metrics", "127.0.0.1:0"])
    defer { try? FileManager.default.removeItem(at: data) }
    defer { broker.signal(SIGKILL) }
    let url = try #require(await metricsURL(of: broker), "\(broker.printed)")
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x3", "--print", "json", "--timeout", "15"])
    // A tap held back means the script ran: then the broker dies under it. The counter's
    // timeout covers the scrapes, each a Python process, slow on a loaded machine.
    let refusals = #"sharedmirror_broker_rejected_requests_total{reason="seeding"}"#
    let deadline = ContinuousClock.now + .seconds(30)
    var page = ""
    while ContinuousClock.now < deadline, counter.isRunning {
      page = try await scrapeMetrics(url)
      if sample(refusals, in: page) ?? 0 > 0 { break }
      try await Task.sleep(for: .milliseconds(100))
    }
    #expect(sample(refusals, in: page) ?? 0 > 0, "\(page)\n\(counter.printed)")
    #expect(counter.isRunning, "the counter gave up before the broker died: \(counter.printed)")
    broker.signal(SIGKILL)
    _ = await broker.waitForExit()

    #expect(await counter.waitForExit() == 1)
    let lost =
      "3 taps were not confirmed by the broker at \(router) within 15.0 seconds (disconnected) "
      + "and are lost"
    let printed = objects(counter.printed)
    #expect(printed.count == 1, "\(counter.printed)")
    #expect(printed.last?["problem"] as? String == lost, "\(counter.printed)")
    #expect(printed.last?["count"] as? Int == 5, "\(counter.printed)")
    #expect(counter.printed.hasSuffix("counter: error: \(lost)\n"), "\(counter.printed)")
  }

  /// As text, the final line says it too, after the count and the connection.
  @Test func aScriptsTapsNotConfirmedInTimeAreTheFinalLinesProblem() async throws {
    let (broker, router, data) = try await startBrokerHoldingWrites()
    defer { try? FileManager.default.removeItem(at: data) }
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x3", "--timeout", "3"])
    #expect(await counter.waitForExit() == 1)
    let lost =
      "3 taps were not confirmed by the broker at \(router) within 3.0 seconds (connected) "
      + "and are lost"
    #expect(
      counter.printed == "count 5 · connected · \(lost)\ncounter: error: \(lost)\n",
      "\(counter.printed)")
  }

  /// A stream ended (SIGTERM) while its broker is gone: its last object says how many taps
  /// are lost, after the objects that said they wait.
  @Test func aStreamsTapsLostOnQuittingAreTheFinalObjectsProblem() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGKILL) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--autoplay", "0.2", "--print", "json"])
    defer { counter.signal(SIGKILL) }
    #expect(await counter.waitForOutput(containing: #""count":"#) != nil, "\(counter.printed)")
    broker.signal(SIGKILL)
    _ = await broker.waitForExit()
    let waiting = await counter.waitForOutput(containing: "wait for the broker (kept here")
    #expect(waiting != nil, "\(counter.printed)")
    counter.signal(SIGTERM)

    #expect(await counter.waitForExit() == 1, "\(counter.printed)")
    let last = try #require(objects(counter.printed).last, "\(counter.printed)")
    let problem = try #require(last["problem"] as? String, "\(counter.printed)")
    // Autoplay taps on until the end: how many is the count's share of them.
    let count = try #require(last["count"] as? Int, "\(counter.printed)")
    #expect(
      problem.contains(
        "taps were not confirmed by the broker at \(router) within 2.0 seconds (disconnected) "
          + "and are lost"), "\(counter.printed)")
    let taps = Int(problem.prefix { $0 != " " }) ?? 0
    #expect(taps > 0 && taps <= count, "\(counter.printed)")
    #expect(counter.printed.hasSuffix("counter: error: \(problem)\n"), "\(counter.printed)")
  }

  /// A broker that answers but holds the taps back (its seed window after a start) is not a
  /// broker that is gone: the problem says the likely reason, and the object keeps the count.
  @Test func tapsTheBrokerHoldsBackSayWhyInTheStream() async throws {
    let (broker, router, data) = try await startBrokerHoldingWrites()
    defer { try? FileManager.default.removeItem(at: data) }
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--autoplay", "0.2", "--print", "json", "--timeout", "1"])
    defer { counter.signal(SIGKILL) }
    let shown = await counter.waitForOutput(containing: "holds writes back")
    let line = try #require(
      shown?.split(separator: "\n").first { $0.contains("holds writes back") },
      "\(counter.printed)")
    let object = try #require(jsonObject(line), "\(line)")
    let problem = try #require(object["problem"] as? String)
    let taps = try #require(Int(problem.prefix { $0 != " " }), "\(problem)")
    let waits = taps == 1 ? "1 tap waits" : "\(taps) taps wait"
    #expect(
      problem
        == "\(waits): the broker holds writes back while it collects its clients' copies "
        + "after its start (its seed window)")
    #expect(object["count"] as? Int ?? 0 > 2, "\(line)")
    #expect(!counter.printed.contains("wait for the broker (kept here"), "\(counter.printed)")
    counter.signal(SIGTERM)
    // Still inside the window, so the taps are lost: the final object says so.
    #expect(await counter.waitForExit() == 1, "\(counter.printed)")
    let last = objects(counter.printed).last?["problem"] as? String
    #expect(last?.contains("(connected) and are lost") == true, "\(counter.printed)")
  }
}
