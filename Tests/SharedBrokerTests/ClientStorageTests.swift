import Foundation
import Sharing
import Synchronization
import Testing

@testable import SharedBroker

/// The client's storage as its callers meet it: a mutation shows at once and stays pending, a
/// burst of them wakes the I/O thread once, and a mutation may read shared values.
@Suite struct ClientStorageTests {
  let storage = ClientStorage(
    machine: ClientStateMachine(
      id: "client", heartbeat: .milliseconds(500), missedHeartbeats: 3, now: .now))
  /// Stands for the key's reference, which a test store's snapshots are keyed by.
  let owner = Owner()

  final class Owner: Sendable {}

  func slot(_ key: String) -> KeySlot {
    KeySlot(
      KeyStateMachine(
        key: key, clientID: "client", initialValue: 0, codec: .json,
        heartbeat: .milliseconds(500), maxWritesInFlight: 32))
  }

  @Test func aBurstOfMutationsWakesTheIOThreadOnceUntilItsTurn() {
    let count = slot("count")
    let wakes = (0..<100).map { _ in storage.mutate(count, of: owner) { $0 += 1 }.wake }
    #expect(wakes.filter { $0 }.count == 1)
    #expect(storage.value(count, of: owner, as: Int.self) == 100)
    #expect(count.unconfirmedWriteCount == 100)

    var actions = ClientActions()
    storage.turn(at: .now, &actions)
    // Not connected: the turn says HELLO and writes nothing; every mutation stays pending.
    #expect(actions.messages.map(\.frames) == [BrokerMessage.hello(client: "client").frames])
    #expect(storage.mutate(count, of: owner) { $0 += 1 }.wake)
    #expect(count.unconfirmedWriteCount == 101)
  }

  @Test func aMutationMayReadSharedValuesItsOwnIncluded() {
    let (count, total) = (slot("count"), slot("total"))
    _ = storage.mutate(count, of: owner) { $0 = 3 }
    let totalSlot = total
    let read = storage.mutate(total, of: owner) { [storage, owner] value in
      value =
        storage.value(count, of: owner, as: Int.self)
        + storage.value(totalSlot, of: owner, as: Int.self) + 1
      return value
    }.result
    #expect(read == 4)
    #expect(storage.reading(total, of: owner, as: Int.self).value == 4)
  }

  @Test func aReadingHasTheValueAndItsErrorsAtOnce() {
    let count = slot("count")
    _ = storage.mutate(count, of: owner) { $0 = 7 }
    let reading = storage.reading(count, of: owner, as: Int.self)
    #expect(reading.value == 7)
    #expect(reading.isLoading)
    #expect(reading.loadError == nil)
    #expect(reading.saveError == nil)
  }
}

extension ClientStorageTests {
  /// A rebase re-runs pending mutations on another process's newer value; one that reads its
  /// own key's value runs outside the key machine too, and sees the value before the rebase.
  @Test func aRebasedMutationMayReadItsOwnKey() {
    let count = slot("count")
    let now = ContinuousClock.now
    for message: BrokerMessage in [
      .synced(key: "count", client: "client"),
      .snapshot(key: "count", version: 1, lastWrite: 0, value: Data("0".utf8), writes: [:]),
    ] {
      if case .synced = message {
        _ = count.handle(.connected(at: now))
        _ = count.handle(.tick(at: now, instance: "run"))
      }
      _ = count.handle(.received(message, at: now, instance: "run"))
    }
    #expect(count.isSynced)
    let seen = Mutex<[Int]>([])
    _ = storage.mutate(count, of: owner) { [storage, owner] value in
      seen.withLock { $0.append(storage.value(count, of: owner, as: Int.self)) }
      value += 1
    }
    #expect(storage.value(count, of: owner, as: Int.self) == 1)
    let update = BrokerMessage.update(
      key: "count", version: 2, client: "other", write: 1, value: Data("10".utf8))
    _ = count.handle(.received(update, at: now, instance: "run"))
    #expect(count.deliverUpdates())
    #expect(storage.value(count, of: owner, as: Int.self) == 11)
    #expect(seen.withLock { $0 } == [0, 1])
  }
}
