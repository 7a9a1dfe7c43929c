import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing
import ZeroMQ

/// Pipelined writes: several compare-and-sets per key in flight, each chained to the previous
/// one, without ever losing another process's update.
@Suite(.timeLimit(.minutes(1)))
struct PipelineTests {
  @Test func aChainedWriteLandsOnlyOnTopOfTheWriteItFollows() async throws {
    try await withBrokerFixture { fixture throws in
      func write(_ client: String, _ id: UInt64, base: UInt64, _ value: String, after: UInt64?) throws
        -> BrokerMessage?
      {
        let request = BrokerMessage.write(
          client: client, write: id, key: "k", base: base, value: Data(value.utf8), after: after
        )
        return try exchange(request.frames, with: fixture.endpoint).map { try BrokerMessage(frames: $0) }
      }
      #expect(try write("a", 1, base: 0, "1", after: nil) == .ack(key: "k", write: 1, version: 1))
      #expect(try write("a", 2, base: 1, "2", after: 1) == .ack(key: "k", write: 2, version: 2))
      // Another client writes between a's write 2 and the write a pipelined behind it.
      #expect(try write("b", 1, base: 2, "b", after: nil) == .ack(key: "k", write: 1, version: 3))
      // Its base (3) is current, but version 3 is b's: the chained write must not bury it.
      #expect(
        try write("a", 3, base: 3, "3", after: 2)
          == .reject(key: "k", write: 3, version: 3, lastWrite: 2, value: Data("b".utf8))
      )
      // A chain naming a write that did not make the current version fails the same way.
      #expect(
        try write("b", 2, base: 3, "x", after: 2)
          == .reject(key: "k", write: 2, version: 3, lastWrite: 1, value: Data("b".utf8))
      )
      #expect(try write("b", 3, base: 3, "c", after: 1) == .ack(key: "k", write: 3, version: 4))
    }
  }

  /// From a client's sockets: a quiet write is answered by its update alone, so the next answer
  /// on its connection is the `PONG` of the `PING` sent after it; a pipelined one likewise, and
  /// a stale one is rejected as any write.
  @Test func aQuietWriteIsAnsweredByItsUpdateAlone() async throws {
    try await withBrokerFixture { fixture throws in
      let client = try RawClient(fixture.endpoint, hello: nil)
      let instance = try client.hello(as: "a", subscribingTo: "k")
      let subscriber = try #require(client.subscriber)
      func published() throws -> BrokerMessage? {
        try subscriber.receive().map { try BrokerMessage(published: $0) }
      }
      // The subscription is in effect once a SYNCED comes: until then one may be lost.
      try subscriber.set(.receiveTimeout, 50)
      var synced = false
      for _ in 1...200 where !synced {
        try client.socket.send(BrokerMessage.sync(client: "a", key: "k").frames)
        while let heard = try published() {
          synced = synced || heard == .synced(key: "k", client: "a")
        }
      }
      try #require(synced)
      try subscriber.set(.receiveTimeout, 5_000)
      func write(_ id: UInt64, base: UInt64, _ value: String, after: UInt64?) throws {
        try client.socket.send(
          BrokerMessage.write(
            client: "a", write: id, key: "k", base: base, value: Data(value.utf8), after: after,
            quiet: true
          ).frames)
      }
      try write(1, base: 0, "1", after: nil)
      try write(2, base: 1, "2", after: 1)
      #expect(try client.request(.ping()) == .pong(instance: instance))
      for version: UInt64 in 1...2 {
        let value = Data("\(version)".utf8)
        #expect(
          try published()
            == .update(key: "k", version: version, client: "a", write: version, value: value))
      }
      try write(3, base: 1, "3", after: nil)
      #expect(
        try #require(try client.socket.receive()).map { String(decoding: $0, as: UTF8.self) }.prefix(5)
          == ["REJECT", "k", "3", "2", "2"])
    }
  }

  @Test func malformedChainsAreRefused() async throws {
    try await withBrokerFixture { fixture throws in
      let base = ["WRITE", "a", "1", "k", "0", "1"].map { Data($0.utf8) }
      for frames in [base + [Data("x".utf8)], base + [Data("1".utf8), Data("2".utf8)]] {
        let reply = try #require(try exchange(frames, with: fixture.endpoint))
        guard case .error(.badRequest, _, _, _) = try BrokerMessage(frames: reply) else {
          Issue.record("expected bad-request, got \(reply.map { String(decoding: $0, as: UTF8.self) })")
          continue
        }
      }
      // The broker still works.
      let reply = try #require(try exchange(base, with: fixture.endpoint))
      #expect(try BrokerMessage(frames: reply) == .ack(key: "k", write: 1, version: 1))
    }
  }

  @Test func aWriterPipelinesAndARejectionResendsEverythingOnce() async throws {
    try await withHeldWritesClient(configuration: .init(maxWritesInFlight: 2)) { broker, client, count, writes in
      count.withLock { $0 += 1 }
      let first = try #require(await writes.next())
      #expect((first.base, first.value, first.after) == (1, "1", nil))
      count.withLock { $0 += 1 }
      let second = try #require(await writes.next())
      #expect((second.base, second.value, second.after) == (2, "2", first.id))
      // The window is full: this one waits for an answer.
      count.withLock { $0 += 1 }
      #expect(count.wrappedValue == 3)

      // Another process had written 10 first: both writes fail, the chain's second with it.
      let rejected = { (id: UInt64) in
        BrokerMessage.reject(key: "count", write: id, version: 2, lastWrite: 0, value: Data("10".utf8))
      }
      broker.reply(rejected(first.id))
      broker.reply(rejected(second.id))
      let rebased = try #require(await writes.next())
      #expect((rebased.base, rebased.value, rebased.after) == (2, "13", nil))
      // The rejection narrowed the window to 1: this mutation is not chained behind the rebased
      // write but sent once the broker applied it.
      count.withLock { $0 += 1 }
      broker.reply(.ack(key: "count", write: rebased.id, version: 3))
      let next = try #require(await writes.next())
      #expect((next.base, next.value, next.after) == (3, "14", nil))
      broker.reply(.ack(key: "count", write: next.id, version: 4))
      try await client.waitUntilConfirmed()
      #expect(count.wrappedValue == 14)
      let sent = broker.requests.filter { if case .write = $0 { true } else { false } }
      #expect(sent.count == 4)
    }
  }

  /// A second answer to a GET the client sent twice (the first was slow) arrives after writes
  /// went out again: it must not make the client forget them, or their mutations would be
  /// applied again on top of the value that already has them.
  @Test func aLateDuplicateSnapshotDoesNotResendConfirmedMutations() async throws {
    try await withHeldWritesClient { broker, client, count, writes in
      count.withLock { $0 += 1 }
      let write = try #require(await writes.next())
      #expect((write.base, write.value) == (1, "1"))
      // The stale snapshot, then (on the same socket, so in this order) the write's ACK.
      broker.reply(.snapshot(key: "count", version: 1, lastWrite: 0, value: Data("0".utf8)))
      broker.reply(.ack(key: "count", write: write.id, version: 2))
      try await client.waitUntilConfirmed(timeout: .seconds(10))
      #expect(count.wrappedValue == 1)
      #expect(broker.requests.filter { if case .write = $0 { true } else { false } }.count == 1)
    }
  }
}
