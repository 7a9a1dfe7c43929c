import Foundation
import SharedBroker
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
}
