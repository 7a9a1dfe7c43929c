import Foundation
import SharedBroker
import SharedBrokerServer
import Sharing
import Testing

/// Updates that arrive faster than a process applies them: observers may skip intermediate
/// values but never step back, and pending local mutations land on the newest value.
@Suite(.timeLimit(.minutes(1)))
struct BurstTests {
  @Test func aBurstEndsAtTheNewestValueWithoutSteppingBack() async throws {
    try await withHeldWritesClient { broker, client, count, writes in
      // A local mutation is in flight when another process's burst (1...500) arrives.
      count.withLock { $0 += 1000 }
      let seen = count.values
      let write = try #require(await writes.next())
      #expect((write.base, write.value) == (1, "1000"))
      for step in 1...500 {
        broker.publish(
          .update(key: "count", version: UInt64(step + 1), client: "other", write: UInt64(step), value: Data("\(step)".utf8))
        )
      }
      var observed: [Int] = []
      for await value in seen {
        observed.append(value)
        if value == 1500 { break }
      }
      // Every value shown is the newest burst value plus the pending mutation, in order.
      #expect(observed.first == 1000)
      #expect(observed.dropFirst().allSatisfy { $0 > 1000 })
      #expect(zip(observed, observed.dropFirst()).allSatisfy { $0 <= $1 })

      // The in-flight write is doomed; the rebased one carries the mutation on top of 500.
      broker.reply(.reject(key: "count", write: write.id, version: 501, lastWrite: 0, value: Data("500".utf8)))
      let rebased = try #require(await writes.next())
      #expect((rebased.base, rebased.value) == (501, "1500"))
      broker.reply(.ack(key: "count", write: rebased.id, version: 502))
      try await client.waitUntilConfirmed()
      #expect(count.wrappedValue == 1500)
    }
  }
}
