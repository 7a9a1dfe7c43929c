import Foundation
import SharedBroker
import SharedBrokerServer
import Sharing
import Testing
import TestSupport
import ZeroMQ

/// The `broker` executable, killed for real.
@Suite(.timeLimit(.minutes(1)))
struct BrokerProcessTests {
  @Test func sigkilledBrokerWithDataLosesNoConfirmedWrite() async throws {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID())")
    defer { try? FileManager.default.removeItem(at: data) }
    let (first, router, publisher) = try await startBroker(["--data", data.path])

    let client = BrokerClient(
      endpoint: router, configuration: .init(heartbeatInterval: .milliseconds(100))
    )
    defer { client.close() }
    let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
    try await client.waitUntilConnected()
    for _ in 0..<100 { count.withLock { $0 += 1 } }
    try await client.waitUntilConfirmed()

    first.signal(SIGKILL)
    #expect(await first.waitForExit() == SIGKILL)
    for _ in 0..<50 { count.withLock { $0 += 1 } }

    let second = try await ChildProcess(
      "broker", ["--listen", router, "--publish", publisher, "--data", data.path]
    )
    _ = await second.waitForOutput(containing: "Broker listening")
    try await client.waitUntilConfirmed()
    #expect(count.wrappedValue == 150)

    let reader = BrokerClient(endpoint: router)
    defer { reader.close() }
    let read = await inProcess(reader) { Shared(wrappedValue: 0, .broker("count")) }
    try await reader.waitUntilConnected()
    #expect(read.wrappedValue == 150)

    second.signal(SIGTERM)
    #expect(await second.waitForExit() == 0)
  }

  /// SIGTERM with clients connected: the broker exits at once, and what `--data` keeps is kept.
  /// The bound is generous (measured alone, as `make test` runs it: 8 to 35 ms); a broker that
  /// waited for a poll timeout or its clients would take a second or more.
  @Test func sigtermWithClientsConnectedExitsPromptlyAndKeepsTheWrites() async throws {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID())")
    defer { try? FileManager.default.removeItem(at: data) }
    let (first, router, publisher) = try await startBroker(["--data", data.path])
    var clients: [BrokerClient] = []
    defer { for client in clients { client.close() } }
    for _ in 0..<3 {
      let client = BrokerClient(endpoint: router)
      clients.append(client)
      let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
      try await client.waitUntilConnected()
      count.withLock { $0 += 1 }
      try await client.waitUntilConfirmed()
    }

    let asked = ContinuousClock.now
    first.signal(SIGTERM)
    #expect(await first.waitForExit() == 0)
    let took = ContinuousClock.now - asked
    print("broker exit after SIGTERM with 3 clients: \(took)")
    #expect(took < .seconds(1), "\(first.printed)")

    let second = try await ChildProcess(
      "broker", ["--listen", router, "--publish", publisher, "--data", data.path]
    )
    _ = await second.waitForOutput(containing: "Broker listening")
    let reader = BrokerClient(endpoint: router)
    defer { reader.close() }
    let read = await inProcess(reader) { Shared(wrappedValue: 0, .broker("count")) }
    try await reader.waitUntilConnected()
    #expect(read.wrappedValue == 3)
    second.signal(SIGTERM)
    #expect(await second.waitForExit() == 0)
  }

  @Test func badFlagsGiveUsageAndAFailingExit() async throws {
    let broker = try await ChildProcess("broker", ["--no-such-flag"])
    #expect(await broker.waitForExit() != 0)
    #expect(broker.printed.contains("Usage: broker"))
    // Endpoints are values like any other: a usage error, before anything is bound.
    for (flag, endpoint) in [
      ("--listen", "nonsense://x"), ("--listen", "tcp://*:99999"), ("--publish", "tcp://x"),
    ] {
      let bad = try await ChildProcess("broker", [flag, endpoint])
      #expect(await bad.waitForExit() == 64)
      #expect(bad.printed.contains("must be an endpoint such as"), "\(bad.printed)")
      #expect(bad.printed.contains("not \"\(endpoint)\""), "\(bad.printed)")
    }
  }

  /// `/dev/null` and a shell's process substitution are readable allow-lists; the start's log
  /// says how many keys they list and how many of them are limited.
  @Test func allowListsFromDevicesAndPipesAreRead() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let secret = directory.appendingPathComponent("server.key")
    try CurveKeyPair.generate().secretKey.write(to: secret, atomically: true, encoding: .utf8)
    let client = try CurveKeyPair.generate().publicKey
    let lists = [
      ("/dev/null", "curve=on, allow-list of 0"),
      // Z85 keys hold characters a shell reads, such as `(` and `*`, but no quotes.
      ("<(echo '\(client)')", "curve=on, allow-list of 1"),
      (
        "<(echo '\(client) read=stats'; echo '\(try CurveKeyPair.generate().publicKey)')",
        "curve=on, allow-list of 2 (1 limited by read= or write=)"
      ),
    ]
    for (list, expected) in lists {
      let broker = try await ChildProcess(
        executable: URL(fileURLWithPath: "/bin/bash"),
        ["-c", "exec \"$0\" --listen 'tcp://127.0.0.1:*' --publish 'tcp://127.0.0.1:*' "
          + "--curve-secret-file '\(secret.path)' --allow-keys \(list)",
         productsDirectory.appendingPathComponent("broker").path])
      #expect(await broker.waitForOutput(containing: expected) != nil, "\(broker.printed)")
      // At once: the broker traps SIGTERM before it says it listens.
      broker.signal(SIGTERM)
      #expect(await broker.waitForExit() == 0, "\(broker.printed)")
    }
  }

  /// A subscriber that stops reading while 10,000 updates of 10 KB go out: the broker queues at
  /// most `--max-queued-updates` of them for it. Measured next to the old queue (100,000).
  @Test func aStalledSubscriberHoldsABoundedQueue() async throws {
    var grown: [Int: Int] = [:]
    for limit in [100_000, 1_000] {
      let (broker, router, publisher) = try await startBroker(["--max-queued-updates", "\(limit)"])
      defer { broker.signal(SIGTERM) }
      let context = try Context()
      defer { context.terminate() }
      let stalled = try Socket(context: context, type: .sub)
      defer { stalled.close() }
      try stalled.set(.receiveHighWaterMark, 1)
      try stalled.set(.subscribe, Array(BrokerMessage.topic(of: "k")))
      try stalled.set(.receiveTimeout, 100)
      try stalled.connect(publisher)
      let writer = try RawClient(router, hello: "w")
      // Read once, to know the subscription is in effect; then never again.
      var synced = false
      for _ in 0..<100 where !synced {
        try writer.socket.send(BrokerMessage.sync(client: "w", key: "k").frames)
        synced = try stalled.receive() != nil
      }
      try #require(synced)
      let before = broker.residentKilobytes
      let value = Data(repeating: UInt8(ascii: "x"), count: 10_000)
      for write in 1...10_000 {
        let reply = try writer.request(.write(client: "w", write: UInt64(write), key: "k", base: UInt64(write - 1), value: value))
        guard case .ack = reply else {
          Issue.record("write \(write): \(String(describing: reply))")
          return
        }
      }
      grown[limit] = broker.residentKilobytes - before
      print("stalled subscriber: queue limit \(limit): the broker grew by \(grown[limit]!) KiB over 10,000 updates of 10 KB")
    }
    #expect(grown[1_000]! < 40 * 1024)
    #expect(grown[1_000]! * 2 < grown[100_000]!)
  }
}
