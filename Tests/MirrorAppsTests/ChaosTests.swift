import Foundation
import Testing
import TestSupport

/// Faults injected into real processes. `make test` runs a small size; `make chaos` sets
/// CHAOS_RESTARTS, CHAOS_COUNTERS and CHAOS_INCREMENTS for the full one.
@Suite(.timeLimit(.minutes(10)))
struct ChaosTests {
  static func setting(_ name: String, _ fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
  }

  @Test func brokerKilledAndRestartedWhileCountersWriteLosesNothing() async throws {
    let restarts = Self.setting("CHAOS_RESTARTS", 3)
    let counters = Self.setting("CHAOS_COUNTERS", 2)
    let increments = Self.setting("CHAOS_INCREMENTS", 300)
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-\(UUID())")
    defer { try? FileManager.default.removeItem(at: data) }
    var (broker, router, publisher) = try await startBroker(["--data", data.path])

    // Each counter taps in bursts so the writes span every restart.
    let bursts = max(1, restarts * 2)
    let burst = increments / bursts
    let script = (Array(repeating: "+x\(burst),wait:40", count: bursts) + ["+x\(increments - burst * bursts)"])
      .filter { !$0.hasPrefix("+x0") }
      .joined(separator: ",")
    let writers = try (0..<counters).map { _ in
      try ChildProcess(
        "counter", ["--broker", router, "--script", script, "--print", "json", "--timeout", "120"]
      )
    }
    for _ in 0..<restarts {
      try await Task.sleep(for: .milliseconds(80))  // fault injection timing, not a wait for work
      broker.signal(SIGKILL)
      _ = await broker.waitForExit()
      broker = try ChildProcess(
        "broker", ["--listen", router, "--publish", publisher, "--data", data.path]
      )
      _ = await broker.waitForOutput(containing: "Broker listening")
    }
    defer { broker.signal(SIGTERM) }
    for writer in writers { #expect(await writer.waitForExit() == 0, "\(writer.printed.suffix(300))") }

    let profile = try ChildProcess("profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await profile.waitForExit() == 0)
    let expected = counters * increments
    let final = profile.printed.split(separator: "\n").last.map(String.init) ?? ""
    #expect(final.contains(#""count":\#(expected),"#) && final.contains(#""numberOfCounts":\#(expected)}"#))
    print("chaos: \(restarts) broker SIGKILLs, \(counters) counters × \(increments) increments → \(final)")
  }
}

@Suite(.timeLimit(.minutes(1)))
struct StorageFailureTests {
  @Test func unpersistableWritesAreRefusedStayPendingAndTheBrokerLives() async throws {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("full-\(UUID())")
    defer { try? FileManager.default.removeItem(at: data) }
    // A 2 KiB file-size limit stands in for a full disk: the log fills after a few writes.
    let broker = try ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      [
        "-c", "ulimit -f 4; exec \"$0\" \"$@\"", productsDirectory.appendingPathComponent("broker").path,
        "--listen", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*", "--data", data.path,
      ]
    )
    defer { broker.signal(SIGTERM) }
    let started = try #require(await broker.waitForOutput(containing: "Broker listening"))
    let router = try #require(
      started.split(separator: " ").first { $0.hasPrefix("router=") }.map { String($0.dropFirst(7)) }
    )

    let counter = try ChildProcess(
      "counter",
      [
        "--broker", router, "--script",
        Array(repeating: "+", count: 20).joined(separator: ",wait:20,"), "--timeout", "1",
      ]
    )
    #expect(await counter.waitForExit() == 1)
    #expect(counter.printed.contains("did not confirm all writes"))
    #expect(await broker.waitForOutput(containing: "Could not persist a write") != nil)

    // The broker is alive and serves what it did persist.
    let profile = try ChildProcess("profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await profile.waitForExit() == 0)
    #expect(broker.process.isRunning)
  }
}

/// Random and truncated frames from a pyzmq script at the live broker executable. `make test`
/// sends a small batch; `make chaos` sets CHAOS_FUZZ_INPUTS to a million.
@Suite(.timeLimit(.minutes(10)))
struct FuzzTests {
  static let script = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Scripts/fuzz_broker.py")

  func residentKilobytes(_ process: ChildProcess) -> Int {
    let status =
      (try? String(contentsOfFile: "/proc/\(process.process.processIdentifier)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
  }

  @Test func brokerSurvivesGarbageAndHonestClientsSeeNoChange() async throws {
    let inputs = ChaosTests.setting("CHAOS_FUZZ_INPUTS", 20_000)
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let before = try ChildProcess("counter", ["--broker", router, "--script", "+x5", "--print", "json"])
    #expect(await before.waitForExit() == 0)
    let memoryBefore = residentKilobytes(broker)

    let fuzz = try runCommand("/usr/bin/python3", [Self.script.path, router, String(inputs), "7"])
    #expect(fuzz.status == 0, "\(fuzz.output)")
    print(fuzz.output.trimmingCharacters(in: .whitespacesAndNewlines))

    #expect(broker.process.isRunning)
    let after = try ChildProcess("profile", ["--broker", router, "--once", "--print", "json"])
    #expect(await after.waitForExit() == 0)
    #expect(after.printed.contains(#"{"count":5,"maxCount":5,"minCount":0,"numberOfCounts":5}"#))
    let memoryAfter = residentKilobytes(broker)
    print("fuzz: broker memory \(memoryBefore) KiB before, \(memoryAfter) KiB after")
    #expect(memoryAfter < memoryBefore + 64 * 1024)
  }
}
