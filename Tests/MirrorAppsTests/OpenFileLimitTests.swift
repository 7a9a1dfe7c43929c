import Foundation
import Logging
import SharedBroker
import Sharing
import TestSupport
import Testing

/// The broker program within its process's open-file limit: it raises the soft limit to the
/// hard one, says how many clients it can hold, and past that refuses new connections without
/// spinning while the clients already in keep working.
@Suite(.timeLimit(.minutes(1)))
struct OpenFileLimitTests {
  /// The broker executable under `ulimit` settings, and the fields of its "Broker listening"
  /// line.
  func startLimitedBroker(_ limits: String) async throws -> (
    process: ChildProcess, router: String, capacity: Int
  ) {
    let broker = try await ChildProcess(
      executable: URL(fileURLWithPath: "/bin/sh"),
      [
        "-c", "\(limits) && exec \"$0\" \"$@\"",
        productsDirectory.appendingPathComponent("broker").path,
        "--listen", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*", "--seed-window", "0",
      ])
    guard let output = await broker.waitForOutput(containing: "Broker listening"),
      let line = output.split(separator: "\n").first(where: { $0.contains("Broker listening") })
    else {
      Issue.record("the broker did not start: \(broker.printed)")
      throw CancellationError()
    }
    let router = line.split(separator: " ").first { $0.hasPrefix("router=") }?.dropFirst(7) ?? ""
    let capacity = line.firstMatch(of: /capacity=(\d+) clients/).flatMap { Int($0.1) } ?? 0
    return (broker, String(router), capacity)
  }

  @Test func theSoftLimitIsRaisedToTheHardOne() async throws {
    let (broker, _, capacity) = try await startLimitedBroker("ulimit -Sn 1024 && ulimit -Hn 4096")
    defer { broker.signal(SIGTERM) }
    #expect(broker.printed.contains("from=1024"), "\(broker.printed)")
    #expect(broker.printed.contains("to=4096"), "\(broker.printed)")
    #expect(broker.printed.contains("(open-file limit 4096)"), "\(broker.printed)")
    #expect(capacity > 1_900 && capacity < 2_048)
  }

  @Test func pastItsCapacityTheBrokerRefusesWithoutSpinning() async throws {
    let (broker, router, capacity) = try await startLimitedBroker("ulimit -n 160")
    defer { broker.signal(SIGTERM) }
    try #require(capacity > 10 && capacity < 80, "\(broker.printed)")
    var logger = Logger(label: "open-file-limit-test")
    logger.logLevel = .critical
    func connect() -> (BrokerClient, Shared<Int>) {
      let client = BrokerClient(endpoint: router, logger: logger)
      let count = withDependencies {
        $0.brokerClient = client
      } operation: {
        Shared(wrappedValue: 0, .broker("limit"))
      }
      return (client, count)
    }
    var inside: [(BrokerClient, Shared<Int>)] = []
    for _ in 0..<capacity {
      inside.append(connect())
      try await inside.last!.0.waitUntilConnected()
    }
    defer { for (client, _) in inside { client.close() } }
    let outside = (0..<4).map { _ in connect() }
    defer { for (client, _) in outside { client.close() } }
    guard let refusals = await broker.waitForOutput(containing: "At capacity") else {
      Issue.record("no refusal logged: \(broker.printed)")
      return
    }
    #expect(refusals.contains("clients=\(capacity)"))
    // Refused, a client retries, then says why it gives up; the broker does not spin for it.
    let ticks = broker.cpuTicks
    let start = ContinuousClock.now
    for (client, _) in outside {
      await #expect(throws: BrokerError.self) { try await client.waitUntilConnected() }
      #expect(client.handshakeFailureReason?.contains("At capacity") == true)
    }
    // A tick is 10 ms: at most a tenth of a core, where a busy loop takes all of one.
    let seconds = (ContinuousClock.now - start) / .seconds(1)
    #expect(Double(broker.cpuTicks - ticks) <= 10 * max(seconds, 1), "the broker spun")
    // One line per 10 s at most.
    let lines = broker.printed.components(separatedBy: "At capacity").count - 1
    #expect(lines >= 1 && Double(lines) <= 1 + seconds / 10)

    // The clients inside keep working.
    inside[0].1.withLock { $0 += 1 }
    try await inside[0].0.waitUntilConfirmed(timeout: .seconds(10))
    for _ in 0..<200 where inside[1].1.wrappedValue != 1 {
      try await Task.sleep(for: .milliseconds(50))
    }
    #expect(inside[1].1.wrappedValue == 1)

    // Room made, new clients get in: a client closing ends its connection a little later, and
    // one refused meanwhile gives up, so each newcomer may take a few tries. The refused clients
    // go first: their sockets keep reconnecting, and would take the room.
    for (client, _) in outside { client.close() }
    for (client, _) in inside.suffix(4) { client.close() }
    inside.removeLast(4)
    for _ in 0..<4 {
      var joined = false
      for _ in 0..<10 where !joined {
        let (client, count) = connect()
        do {
          try await client.waitUntilConnected(timeout: .seconds(20))
          inside.append((client, count))
          joined = true
          #expect(count.wrappedValue == 1)
        } catch {
          client.close()
        }
      }
      #expect(joined)
    }
  }
}
