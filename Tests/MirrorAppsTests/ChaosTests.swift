import Dependencies
import Foundation
import SharedBroker
import Sharing
import Testing
import TestSupport

/// Faults injected into real processes. `make test` runs a small size; `make chaos` sets
/// CHAOS_RESTARTS, CHAOS_COUNTERS, CHAOS_INCREMENTS and CHAOS_STOP_SECONDS for the full one.
@Suite(.timeLimit(.minutes(10)))
struct ChaosTests {
  static func setting(_ name: String, _ fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
  }

  /// Prints one row of the summary table that `make chaos` shows.
  static func report(fault: String, injected: String, inputs: String, lost: Int) {
    print("chaos-row | \(fault) | \(injected) | \(inputs) | \(lost) |")
  }

  static func lastLine(_ text: String) -> String {
    text.split(separator: "\n").last.map(String.init) ?? ""
  }

  /// The `count` of a `--print json` line, or -1.
  static func count(in line: String) -> Int {
    guard let data = line.data(using: .utf8),
      let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { return -1 }
    return object["count"] as? Int ?? -1
  }

  /// With `--data`, the restarted broker has every confirmed write. Without it, it has nothing,
  /// and the clients' copies (the counters' and the probe's) are what it gets back: the newest
  /// wins, and the counters' pending taps go on top.
  @Test(arguments: [true, false])
  func brokerKilledAndRestartedWhileCountersWriteLosesNothing(withData: Bool) async throws {
    let restarts = Self.setting("CHAOS_RESTARTS", 3)
    let counters = Self.setting("CHAOS_COUNTERS", 2)
    let increments = Self.setting("CHAOS_INCREMENTS", 300)
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-\(UUID())")
    defer { try? FileManager.default.removeItem(at: data) }
    let storage = withData ? ["--data", data.path] : ["--seed-window", "1"]
    var (broker, router, publisher) = try await startBroker(storage)

    // Each counter taps in bursts so the writes span every restart.
    let bursts = max(1, restarts * 2)
    let burst = increments / bursts
    let script = (Array(repeating: "+x\(burst),wait:40", count: bursts) + ["+x\(increments - burst * bursts)"])
      .filter { !$0.hasPrefix("+x0") }
      .joined(separator: ",")
    var writers: [ChildProcess] = []
    for _ in 0..<counters {
      writers.append(
        try await ChildProcess(
          "counter", ["--broker", router, "--script", script, "--print", "json", "--timeout", "120"]
        )
      )
    }
    // A client with the programs' timing watches the same key: after each restart, the time
    // until it is in sync again is what every client needs.
    let probe = BrokerClient(endpoint: router)
    defer { probe.close() }
    let probed = withDependencies {
      $0.brokerClient = probe
      $0.persistentReferences = PersistentReferences()
    } operation: {
      Shared(wrappedValue: [String: Int](), .broker("stats"))
    }
    try await probe.waitUntilConnected()
    var states = probe.connectionStates.makeAsyncIterator()
    var resyncTimes: [Duration] = []
    for _ in 0..<restarts {
      try await Task.sleep(for: .milliseconds(80))  // fault injection timing, not a wait for work
      broker.signal(SIGKILL)
      _ = await broker.waitForExit()
      broker = try await ChildProcess("broker", ["--listen", router, "--publish", publisher] + storage)
      _ = await broker.waitForOutput(containing: "Broker listening")
      let listening = ContinuousClock.now
      // Out of sync (it may notice only at its next heartbeat), then in sync again.
      while let state = await states.next(), state == .connected {}
      while let state = await states.next(), state != .connected {}
      resyncTimes.append(.now - listening)
    }
    defer { broker.signal(SIGTERM) }
    _ = probed
    for writer in writers { #expect(await writer.waitForExit() == 0, "\(writer.printed.suffix(300))") }

    let profile = try await ChildProcess("profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await profile.waitForExit() == 0)
    let expected = counters * increments
    let final = Self.lastLine(profile.printed)
    #expect(final.contains(#""count":\#(expected),"#) && final.contains(#""numberOfCounts":\#(expected)}"#))
    let kind = withData ? "--data" : "memory only"
    print("chaos: \(restarts) broker SIGKILLs (\(kind)), \(counters) counters × \(increments) increments → \(final)")
    // A figure, not a check (timings belong in benchmarks): the goal is the median's. A restart
    // can also wait out the broker's window for the clients' copies, which the slowest shows.
    let sorted = resyncTimes.sorted()
    let median = sorted[sorted.count / 2]
    print(
      "chaos: back in sync after each restart: median \(median) (goal ≤ 1 s: "
        + (median <= .seconds(1) ? "met" : "not met") + "), slowest \(sorted.last!)"
    )
    // Afterwards, with the probe still connected, the broker only answers its heartbeats.
    let ticks = broker.cpuTicks
    try await Task.sleep(for: .seconds(1))  // a window to measure CPU time in, not a wait for work
    let idle = broker.cpuTicks - ticks
    print("chaos: the broker used \(idle) ticks of CPU in 1 s once idle")
    #expect(idle <= 10)
    Self.report(
      fault: "broker SIGKILL + restart (\(kind))", injected: "\(restarts)",
      inputs: "\(counters) × \(increments) increments", lost: expected - Self.count(in: final)
    )
  }

  /// A reader frozen with SIGSTOP while another process writes: the broker's queue for it is
  /// bounded (high-water mark), and after SIGCONT it notices the silence, resyncs and shows
  /// the final value.
  @Test func stoppedReaderCatchesUpAndTheBrokerStaysBounded() async throws {
    let seconds = Self.setting("CHAOS_STOP_SECONDS", 1)
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let reader = try await ChildProcess("counter", ["--broker", router])
    defer { reader.signal(SIGKILL) }
    #expect(await reader.waitForOutput(containing: "count 0 · connected") != nil)
    let memoryBefore = broker.residentKilobytes

    reader.signal(SIGSTOP)
    // Writes go on for `seconds`, in bursts of 200 every 100 ms.
    let bursts = seconds * 10
    let writer = try await ChildProcess(
      "counter",
      [
        "--broker", router, "--print", "json", "--timeout", "60",
        "--script", Array(repeating: "+x200,wait:100", count: bursts).joined(separator: ","),
      ]
    )
    #expect(await writer.waitForExit() == 0)
    let total = bursts * 200
    #expect(Self.count(in: Self.lastLine(writer.printed)) == total)
    let memoryStopped = broker.residentKilobytes
    reader.signal(SIGCONT)

    let caughtUp = await reader.waitForOutput(containing: "count \(total) · connected")
    #expect(caughtUp != nil, "\(reader.printed.suffix(300))")
    print(
      "chaos: reader stopped during \(total) writes; broker memory \(memoryBefore) KiB before, "
        + "\(memoryStopped) KiB while it was stopped; caught up: \(caughtUp != nil)"
    )
    #expect(memoryStopped < memoryBefore + 64 * 1024)
    Self.report(
      fault: "reader SIGSTOP \(seconds) s, then SIGCONT", injected: "1",
      inputs: "\(total) writes", lost: caughtUp == nil ? total : 0
    )
  }

  /// Counters SIGKILLed in the middle of their writes: the others finish with every increment,
  /// and the broker forgets the dead clients once they have been silent for its client timeout.
  @Test func killedClientsLeaveTheOthersUnaffectedAndAreForgotten() async throws {
    let increments = Self.setting("CHAOS_INCREMENTS", 300)
    let (broker, router, _) = try await startBroker(["--client-timeout", "2"])
    defer { broker.signal(SIGTERM) }
    let script = Array(repeating: "+x\(max(1, increments / 10)),wait:20", count: 10).joined(separator: ",")
    let arguments = ["--broker", router, "--print", "json", "--timeout", "60", "--script"]
    // The victims tap every 20 ms for far longer than the survivors need (over two minutes, so
    // a loaded machine's slow survivors still find them tapping), and are killed mid-write.
    let tapping = Array(repeating: "+,wait:20", count: 5_000).joined(separator: ",")
    var victims: [ChildProcess] = []
    var survivors: [ChildProcess] = []
    for _ in 0..<2 { victims.append(try await ChildProcess("counter", arguments + [tapping])) }
    for _ in 0..<2 { survivors.append(try await ChildProcess("counter", arguments + [script])) }
    for survivor in survivors {
      #expect(await survivor.waitForExit() == 0, "\(survivor.printed.suffix(300))")
    }
    for victim in victims {
      #expect(victim.isRunning)
      victim.signal(SIGKILL)
    }
    let survivorsWrote = 2 * 10 * max(1, increments / 10)

    let profile = try await ChildProcess("profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await profile.waitForExit() == 0)
    let final = Self.count(in: Self.lastLine(profile.printed))
    // Every survivor increment is there, plus the victims' writes that were confirmed in time.
    #expect(final >= survivorsWrote)
    #expect(Self.lastLine(profile.printed).hasSuffix(#""numberOfCounts":\#(final)}"#))
    #expect(await broker.waitForOutput(containing: "Forgot silent clients") != nil)
    print("chaos: 2 of 4 counters SIGKILLed mid-write; survivors wrote \(survivorsWrote), final \(final)")
    Self.report(
      fault: "client SIGKILL mid-write", injected: "2",
      inputs: "2 × \(survivorsWrote / 2) increments, 2 tapping until killed",
      lost: max(0, survivorsWrote - final)
    )
  }
}

@Suite(.timeLimit(.minutes(1)))
struct StorageFailureTests {
  @Test func unpersistableWritesAreRefusedStayPendingAndTheBrokerLives() async throws {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("full-\(UUID())")
    defer { try? FileManager.default.removeItem(at: data) }
    // A 2 KiB file-size limit stands in for a full disk: the log fills after a few writes.
    let broker = try await ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      [
        "-c", "ulimit -f 4; exec \"$0\" \"$@\"", productsDirectory.appendingPathComponent("broker").path,
        "--listen", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*", "--data", data.path,
        "--seed-window", "0",
      ]
    )
    defer { broker.signal(SIGTERM) }
    let started = try #require(await broker.waitForOutput(containing: "Broker listening"))
    let router = try #require(
      started.split(separator: " ").first { $0.hasPrefix("router=") }.map { String($0.dropFirst(7)) }
    )

    let counter = try await ChildProcess(
      "counter",
      [
        "--broker", router, "--script",
        Array(repeating: "+", count: 20).joined(separator: ",wait:20,"), "--timeout", "1",
      ]
    )
    #expect(await counter.waitForExit() == 1)
    #expect(counter.printed.contains("not confirmed by the broker"))
    #expect(await broker.waitForOutput(containing: "Could not persist a write") != nil)
    // Named as the disk's problem, not as the stale errno of a short write.
    #expect(broker.printed.contains("could not append to the write log: File too large") || broker.printed.contains("could not append to the write log: No space left on device"), "\(broker.printed.suffix(600))")
    #expect(!broker.printed.contains("Resource temporarily unavailable"))

    // The broker is alive and serves what it did persist.
    let profile = try await ChildProcess("profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await profile.waitForExit() == 0)
    #expect(broker.isRunning)
    // Refused writes stay with their writer (reported as unconfirmed), never half-applied.
    ChaosTests.report(
      fault: "disk full (file-size limit on --data)", injected: "1", inputs: "20 writes",
      lost: broker.isRunning && counter.printed.contains("not confirmed by the broker") ? 0 : 1
    )
  }
}

/// Random and truncated frames from a pyzmq script at the live broker executable. `make test`
/// sends a small batch; `make chaos` sets CHAOS_FUZZ_INPUTS to a million.
@Suite(.timeLimit(.minutes(10)))
struct FuzzTests {
  static let script = repositoryFile("Scripts/fuzz_broker.py")

  @Test func brokerSurvivesGarbageAndHonestClientsSeeNoChange() async throws {
    let inputs = ChaosTests.setting("CHAOS_FUZZ_INPUTS", 20_000)
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let before = try await ChildProcess("counter", ["--broker", router, "--script", "+x5", "--print", "json"])
    #expect(await before.waitForExit() == 0)
    let memoryBefore = broker.residentKilobytes

    let fuzz = try await runCommand("/usr/bin/python3", [Self.script.path, router, String(inputs), "7"])
    #expect(fuzz.status == 0, "\(fuzz.output)")
    print(fuzz.output.trimmingCharacters(in: .whitespacesAndNewlines))

    #expect(broker.isRunning)
    let after = try await ChildProcess("profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await after.waitForExit() == 0)
    #expect(after.printed.contains(#"{"count":5,"maxCount":5,"minCount":0,"numberOfCounts":5}"#))
    let memoryAfter = broker.residentKilobytes
    print("fuzz: broker memory \(memoryBefore) KiB before, \(memoryAfter) KiB after")
    #expect(memoryAfter < memoryBefore + 64 * 1024)
    let honest = after.printed.contains(#""count":5,"#)
    ChaosTests.report(
      fault: "random and truncated frames (pyzmq)", injected: "\(inputs)", inputs: "\(inputs) messages",
      lost: honest ? 0 : 5
    )
  }
}
