import Foundation
internal import Logging
internal import Sharing
import Synchronization

/// What a ``BrokerClient``'s threads share: each key's ``KeySlot`` (its snapshot and pending
/// mutations), the mailbox through which the user's threads reach the I/O thread's
/// ``ClientMachine``, what that thread publishes for waiters (which keys are in sync, the
/// brokers, whether writes are held back), and how the connection is reported.
///
/// The machine is not here: its owner, the ``ClientDriver`` on the I/O thread, alone touches it.
/// A user's thread records a mutation in its key's slot and posts it to the mailbox; the first
/// post after the I/O thread took its mail wakes that thread, once for any number of posts.
/// Every lock here is a leaf: a push, a read or a copy, nothing called under it.
final class ClientStorage: Sendable {
  /// The keys, the mailbox, and what the I/O thread published, under one leaf lock.
  private struct Shared {
    var slots: [KeySlot] = []
    var references: [AnyObject?] = []
    var indices: [String: Int] = [:]
    /// Numbers the slots, so that the mail of a replaced one is told from its successor's.
    var nextEpoch: UInt64 = 1
    /// The slots changed since the I/O thread last took them.
    var slotsChanged = false
    var mail: [ClientMail] = []
    /// The I/O thread was woken for mail it has not taken yet: more mail needs no other wake-up.
    var woken = false
    /// Which keys the machine holds in sync, as the I/O thread last published.
    var synced: [Bool] = []
    /// Keys reloaded or re-declared whose mail the I/O thread has not taken: not in sync,
    /// whatever it published before.
    var stale: Set<Int> = []
    var brokers: BrokerList
    var isHeldBack = false
    var closed = false
  }

  private let shared: Mutex<Shared>
  private let connection = Mutex(ConnectionReport())
  /// Wakes the I/O thread.
  private let wake: @Sendable () -> Void
  /// Signalled whenever waiters (for a confirmation, for the sync) may want to look again.
  let progress = AsyncSignal()
  let logger: Logger
  /// The client's endpoints, as log lines name them.
  let endpoint: String

  init(
    brokers: BrokerList, endpoint: String, logger: Logger, wake: @escaping @Sendable () -> Void
  ) {
    shared = Mutex(Shared(brokers: brokers))
    self.endpoint = endpoint
    self.logger = logger
    self.wake = wake
  }

  // MARK: - For the keys' references (any thread)

  /// The reference of `key`, made by `make` (with the key's new slot) if the client does not
  /// mirror the key yet, or mirrors it with another value type.
  func reference<Value: Sendable & Equatable>(
    key: String, initialValue: Value, codec: BrokerCodec<Value>,
    make: (KeySlot) -> BrokerReference<Value>
  ) -> BrokerReference<Value> {
    let (reference, wake) = shared.withLock { shared -> (BrokerReference<Value>, Bool) in
      if let index = shared.indices[key],
        let existing = shared.references[index] as? BrokerReference<Value>
      {
        return (existing, false)
      }
      let index = shared.indices[key] ?? shared.slots.count
      let epoch = shared.nextEpoch
      shared.nextEpoch += 1
      let slot = KeySlot(
        index: index, epoch: epoch, key: key, initialValue: KeyValue(initialValue),
        codec: BrokerCodec(
          decode: { KeyValue(try codec.decode($0)) },
          encode: { try codec.encode($0.as(Value.self)) }))
      let reference = make(slot)
      // A new slot: nobody else can hold its lock yet.
      slot.state.withLock { state in
        state.tell = { [weak reference] value, stamp, onlyTheValue in
          reference?.changed(value, stamp: stamp, onlyTheValue: onlyTheValue)
        }
      }
      if index == shared.slots.count {
        shared.indices[key] = index
        shared.slots.append(slot)
        shared.references.append(reference)
        shared.synced.append(false)
      } else {
        shared.slots[index] = slot
        shared.references[index] = reference
        shared.stale.insert(index)
      }
      shared.slotsChanged = true
      let mail = ClientMail.added(
        index: index, epoch: epoch, key: key, initialValue: KeyValue(initialValue))
      return (reference, Self.post(mail, in: &shared))
    }
    if wake { self.wake() }
    return reference
  }

  /// Tells the I/O thread of a mutation recorded in `slot` (the caller holds the slot's body
  /// lock, so a key's mail keeps the order of its sequences).
  func mutated(_ slot: KeySlot, sequence: UInt64, value: KeyValue) {
    let mail = ClientMail.mutated(
      index: slot.index, epoch: slot.epoch, sequence: sequence, value: value)
    if shared.withLock({ Self.post(mail, in: &$0) }) { wake() }
  }

  /// Asks for a fresh snapshot of the key of `slot`: it is not in sync from now on, so a wait
  /// cannot end on the old snapshot.
  func reload(_ slot: KeySlot) {
    let wake = shared.withLock { shared in
      shared.stale.insert(slot.index)
      return Self.post(.reload(index: slot.index, epoch: slot.epoch), in: &shared)
    }
    if wake { self.wake() }
  }

  /// Appends `mail`; returns whether the I/O thread must be woken for it.
  private static func post(_ mail: ClientMail, in shared: inout Shared) -> Bool {
    shared.mail.append(mail)
    defer { shared.woken = true }
    return !shared.woken
  }

  /// Whether every key named in `keys` (all keys for `nil`) is in sync with the broker and,
  /// if `confirmed`, has no mutation the broker has not confirmed.
  func areSynced(_ keys: [String]?, confirmed: Bool) -> Bool {
    let named = shared.withLock { shared -> [(slot: KeySlot, synced: Bool)] in
      let indices = keys.map { $0.compactMap { shared.indices[$0] } } ?? Array(shared.slots.indices)
      return indices.map { index in
        (shared.slots[index], shared.synced[index] && !shared.stale.contains(index))
      }
    }
    return named.allSatisfy { slot, synced in
      synced && (!confirmed || slot.unconfirmedWriteCount == 0)
    }
  }

  /// The broker's refusal to this client's key (`forbidden`), which waiting cannot change,
  /// among the keys named in `keys` (all keys for `nil`): of a read, or with `writes`, of a write.
  func forbidden(_ keys: [String]?, writes: Bool) -> BrokerError? {
    for slot in slots(named: keys) {
      let errors = slot.state.withLock { [$0.loadError] + (writes ? [$0.saveError] : []) }
      if let refusal = errors.first(where: KeyMachine.isForbidden) as? BrokerError {
        return refusal
      }
    }
    return nil
  }

  /// The slots of the keys named in `keys` (all keys for `nil`).
  private func slots(named keys: [String]?) -> [KeySlot] {
    shared.withLock { shared in
      keys.map { $0.compactMap { shared.indices[$0].map { shared.slots[$0] } } } ?? shared.slots
    }
  }

  /// How many mutations of the keys named in `keys` (all keys for `nil`) await the broker's
  /// confirmation.
  func unconfirmedWriteCount(of keys: [String]? = nil) -> Int {
    slots(named: keys).reduce(0) { $0 + $1.unconfirmedWriteCount }
  }

  /// How many mutations of the keys named in `keys` (all keys for `nil`) the broker refused
  /// (`forbidden`).
  func refusedWriteCount(of keys: [String]? = nil) -> Int {
    slots(named: keys).reduce(0) { $0 + $1.refusedWriteCount }
  }

  /// The brokers the client moves among, and the one its DEALER connects to.
  var brokers: BrokerList { shared.withLock { $0.brokers } }

  /// Whether the broker holds writes back while it collects its clients' copies.
  var isHeldBack: Bool { shared.withLock { $0.isHeldBack } }

  // MARK: - For the I/O thread

  /// Takes the mail posted since the last call (swapped with `mail`, an empty buffer whose
  /// storage is reused), and the slots when they changed.
  func takeMail(into mail: inout [ClientMail]) -> [KeySlot]? {
    shared.withLock { shared in
      shared.woken = false
      swap(&mail, &shared.mail)
      if !shared.stale.isEmpty {
        // The machine marks them stale before it publishes anything again.
        for index in shared.stale { shared.synced[index] = false }
        shared.stale = []
      }
      guard shared.slotsChanged else { return nil }
      shared.slotsChanged = false
      return shared.slots
    }
  }

  /// What the I/O thread's machine says of the keys and the brokers, for waiters.
  func publish(synced: [Bool], brokers: BrokerList, isHeldBack: Bool) {
    shared.withLock { shared in
      for index in synced.indices where index < shared.synced.count {
        shared.synced[index] = synced[index]
      }
      shared.brokers = brokers
      shared.isHeldBack = isHeldBack
    }
  }

  // MARK: - The connection's report

  /// Runs `body` on the connection's report, under its lock.
  func withConnection<R>(_ body: (inout ConnectionReport) -> R) -> R {
    connection.withLock { body(&$0) }
  }

  /// Lets go of the references once the client closes: they keep their values, and hear
  /// nothing more.
  func close() {
    let slots = shared.withLock { shared in
      shared.references = shared.references.map { _ in nil }
      return shared.slots
    }
    for slot in slots { slot.close() }
  }
}
