import Foundation
import Sharing
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

  func slot(_ key: String) -> KeySlot<Int> {
    KeySlot(
      KeyStateMachine(
        key: key, clientID: "client", initialValue: 0, codec: .json,
        heartbeat: .milliseconds(500), maxWritesInFlight: 32))
  }

  @Test func aBurstOfMutationsWakesTheIOThreadOnceUntilItsTurn() {
    let count = slot("count")
    let wakes = (0..<100).map { _ in storage.mutate(count, of: owner) { $0 += 1 }.wake }
    #expect(wakes.filter { $0 }.count == 1)
    #expect(storage.value(count, of: owner) == 100)
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
    storage.mutate(count, of: owner) { $0 = 3 }
    let totalSlot = total
    let read = storage.mutate(total, of: owner) { [storage, owner] value in
      value = storage.value(count, of: owner) + storage.value(totalSlot, of: owner) + 1
      return value
    }.result
    #expect(read == 4)
    #expect(storage.reading(total, of: owner).value == 4)
  }

  @Test func aReadingHasTheValueAndItsErrorsAtOnce() {
    let count = slot("count")
    storage.mutate(count, of: owner) { $0 = 7 }
    let reading = storage.reading(count, of: owner)
    #expect(reading.value == 7)
    #expect(reading.isLoading)
    #expect(reading.loadError == nil)
    #expect(reading.saveError == nil)
  }
}
