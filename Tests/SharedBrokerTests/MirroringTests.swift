import Dependencies
import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing
import ZeroMQ

@Suite(.timeLimit(.minutes(1)))
struct MirroringTests {
  @Test func mirrorsBothWaysBetweenTwoClients() async throws {
    try await withBrokerFixture { fixture in
      let first = fixture.makeClient()
      let second = fixture.makeClient()
      let a = await inProcess(first) { Shared(wrappedValue: Stats(), .broker("stats")) }
      let b = await inProcess(second) { Shared(wrappedValue: Stats(), .broker("stats")) }
      try await first.waitUntilConnected()
      try await second.waitUntilConnected()

      let seenByB = b.values
      a.withLock { $0.count += 1 }
      #expect(a.wrappedValue.count == 1)  // its own write, at once
      #expect(await firstValue(in: seenByB) { $0.count == 1 }?.count == 1)

      let seenByA = a.values
      b.withLock { $0.count = 10 }
      #expect(await firstValue(in: seenByA) { $0.count == 10 }?.count == 10)
    }
  }

  @Test func lateJoinerGetsTheCurrentValueAtOnce() async throws {
    try await withBrokerFixture { fixture in
      let writer = fixture.makeClient()
      let written = await inProcess(writer) { Shared(wrappedValue: 0, .broker("count")) }
      try await writer.waitUntilConnected()
      written.withLock { $0 = 42 }
      try await writer.waitUntilConfirmed()
      // The writer goes away before any reader exists; the value stays with the broker.
      writer.close()

      let reader = fixture.makeClient()
      let read = await inProcess(reader) { Shared(wrappedValue: 0, .broker("count")) }
      try await reader.waitUntilConnected()
      #expect(read.wrappedValue == 42)
      #expect(!read.isLoading)
    }
  }

  /// A subscriber that never says `SYNC` (a client in another language may not) joins while a
  /// key is written, so publishes may take in its subscription: it hears the key's updates.
  @Test func aSubscriberThatJoinsWhileAKeyIsWrittenHearsItsUpdates() async throws {
    try await withBrokerFixture { fixture in
      let writer = fixture.makeClient()
      let written = await inProcess(writer) { Shared(wrappedValue: 0, .broker("count")) }
      try await writer.waitUntilConnected()
      let listener = try RawClient(fixture.endpoint, hello: nil)
      try listener.hello(as: "listener", subscribingTo: "count")
      let subscriber = try #require(listener.subscriber)
      var heard: BrokerMessage?
      for _ in 1...2_000 where heard == nil {
        written.withLock { $0 += 1 }
        try await writer.waitUntilConfirmed()
        while heard == nil, let frames = try subscriber.receive(dontWait: true) {
          heard = try BrokerMessage(published: frames)
        }
      }
      // The writer hears its update on a connection of its own: the first update heard here may
      // be an earlier write's, and the last one follows it.
      try subscriber.set(.receiveTimeout, 10_000)
      let last = written.wrappedValue
      while case .update(let key, _, _, _, let value)? = heard,
        Int(String(decoding: value, as: UTF8.self)) != last
      {
        #expect(key == "count")
        heard = try subscriber.receive().map { try BrokerMessage(published: $0) }
      }
      guard case .update(let key, _, _, _, _)? = heard else {
        Issue.record("the subscriber did not hear the last write, \(last)")
        return
      }
      #expect(key == "count")
    }
  }

  @Test func concurrentIncrementsFromFourClientsAreAllApplied() async throws {
    try await withBrokerFixture { fixture in
      let clients = (0..<4).map { _ in fixture.makeClient() }
      var counters: [Shared<Stats>] = []
      for client in clients {
        counters.append(await inProcess(client) { Shared(wrappedValue: Stats(), .broker("stats")) })
        try await client.waitUntilConnected()
      }
      await withTaskGroup(of: Void.self) { group in
        for counter in counters {
          group.addTask {
            for expected in 1...1_000 {
              let seen = counter.withLock { stats -> Int in
                stats.count += 1
                stats.numberOfCounts += 1
                return stats.count
              }
              // Each client sees its own write immediately (at least its own increments).
              precondition(seen >= expected)
            }
          }
        }
      }
      for client in clients { try await client.waitUntilConfirmed(timeout: .seconds(30)) }
      for counter in counters {
        let final = await firstValue(in: counter.values) { $0.count == 4_000 }
        #expect(final == Stats(count: 4_000, numberOfCounts: 4_000))
      }
      let statistics = try #require(fixture.server?.statistics)
      // Batching: far fewer writes than mutations reached the broker.
      #expect(statistics.writesApplied <= 4_000)
      #expect(statistics.writesApplied >= 1)
    }
  }

  @Test func readerFollowsWithSharedReader() async throws {
    try await withBrokerFixture { fixture in
      let writer = fixture.makeClient()
      let reader = fixture.makeClient()
      let shared = await inProcess(writer) { Shared(wrappedValue: "a", .broker("name")) }
      let read = await inProcess(reader) { SharedReader(wrappedValue: "a", .broker("name")) }
      try await writer.waitUntilConnected()
      try await reader.waitUntilConnected()
      let stream = read.values
      shared.withLock { $0 = "b" }
      #expect(await firstValue(in: stream) { $0 == "b" } == "b")
    }
  }
}
