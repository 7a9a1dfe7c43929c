import Foundation
import SharedBroker
import SharedBrokerServer
import Sharing
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(1)))
struct GapTests {
  @Test func skippedVersionsAreDetectedAndResynced() async throws {
    let snapshots = Mutex(0)
    let publisherEndpoint = Mutex("")
    let broker = try FakeBroker { request in
      switch request {
      case .hello:
        return [.welcome(instance: "fake", publisher: publisherEndpoint.withLock { $0 })]
      case .ping:
        return [.pong(instance: "fake")]
      case let .sync(client, key):
        return [.synced(key: key, client: client)]
      case let .get(_, key):
        // First snapshot: version 1. After the gap: version 4.
        let count = snapshots.withLock { count in
          count += 1
          return count
        }
        return count == 1
          ? [.snapshot(key: key, version: 1, lastWrite: 0, value: Data("1".utf8))]
          : [.snapshot(key: key, version: 4, lastWrite: 0, value: Data("4".utf8))]
      default:
        return []
      }
    }
    publisherEndpoint.withLock { $0 = broker.publisherEndpoint }
    defer { broker.stop() }

    let client = BrokerClient(endpoint: broker.endpoint)
    defer { client.close() }
    let value = await inProcess(client) { Shared(wrappedValue: 0, .broker("k")) }
    try await client.waitUntilConnected()
    #expect(value.wrappedValue == 1)

    // Version 2 never arrives (as after a high-water-mark drop); version 3 does.
    let stream = value.values
    broker.publish(.update(key: "k", version: 3, client: "other", write: 1, value: Data("3".utf8)))
    #expect(await firstValue(in: stream) { $0 == 4 } == 4)
    let gets = broker.requests.filter { if case .get = $0 { true } else { false } }
    #expect(gets.count == 2)
  }

  /// The last updates before a quiet spell are dropped (the broker's queue for a slow
  /// subscriber was full): no later update reveals the gap, but the next PONG does, and the
  /// client resyncs within two heartbeats.
  @Test func droppedLastUpdatesAreFoundWithinTwoHeartbeats() async throws {
    let brokerVersion = Mutex<UInt64>(1)
    let publisherEndpoint = Mutex("")
    let broker = try FakeBroker { request in
      switch request {
      case .hello:
        return [.welcome(instance: "fake", publisher: publisherEndpoint.withLock { $0 })]
      case let .ping(versions):
        let current = brokerVersion.withLock { $0 }
        let behind = versions.filter { $0.version != current }.map { KeyVersion(key: $0.key, version: current) }
        return [.pong(instance: "fake", behind: behind)]
      case let .sync(client, key):
        return [.synced(key: key, client: client)]
      case let .get(_, key):
        let current = brokerVersion.withLock { $0 }
        return [.snapshot(key: key, version: current, lastWrite: 0, value: Data("\(current)".utf8))]
      default:
        return []
      }
    }
    publisherEndpoint.withLock { $0 = broker.publisherEndpoint }
    defer { broker.stop() }
    let client = BrokerClient(endpoint: broker.endpoint, configuration: .init(heartbeatInterval: .milliseconds(100)))
    defer { client.close() }
    let value = await inProcess(client) { Shared(wrappedValue: 0, .broker("k")) }
    try await client.waitUntilConnected()
    #expect(value.wrappedValue == 1)

    // Versions 2 and 3 are made and their updates dropped: nothing is published.
    // The stream holds every request from the start: those before the drop are skipped.
    var requests = broker.requestStream.makeAsyncIterator()
    let stream = value.values
    let earlier = broker.requests.count
    brokerVersion.withLock { $0 = 3 }
    for _ in 0..<earlier { _ = await requests.next() }
    var heartbeats = 0
    while let request = await requests.next() {
      if case .ping = request { heartbeats += 1 }
      if case .get = request { break }
    }
    print("dropped last updates: the client asked again after \(heartbeats) heartbeat(s)")
    #expect(heartbeats <= 2, "\(heartbeats) heartbeats before the client asked again")
    #expect(await firstValue(in: stream) { $0 == 3 } == 3)
  }
}
