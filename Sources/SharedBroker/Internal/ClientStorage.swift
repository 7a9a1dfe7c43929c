import Foundation
internal import OrderedCollections
internal import Sharing

/// A ``BrokerClient``'s one lock and what it guards: the ``ClientStateMachine``, with every key's
/// ``KeyStateMachine`` in it, and the references of the keys. Every call feeds the machine and
/// returns, or keeps, what it asks for (``ClientActions``); nothing is carried out under the lock.
/// The caller tells a reference's observers after unlocking; what calls from other threads ask
/// of the I/O thread (messages, subscriptions) it takes at its next turn, woken once for any
/// number of calls.
///
/// A mutation records itself and wakes the I/O thread, which encodes and sends it: no socket call
/// runs on a writer's thread.
final class ClientStorage: @unchecked Sendable {
  /// Recursive: a mutation may read shared values, of this client too, and so may a rebase,
  /// which re-runs mutations.
  private let lock = NSRecursiveLock()
  // Guarded by `lock`.
  private var machine: ClientStateMachine
  /// What calls from other threads asked of the I/O thread since its last turn.
  private var actions = ClientActions()
  /// The I/O thread was woken for work it has not taken yet: more work needs no other wake-up.
  private var woken = false
  /// The reference of each key (the machine names a changed key by its index).
  private var references: [String: any KeyReference] = [:]

  init(machine: ClientStateMachine) {
    self.machine = machine
  }

  // MARK: - For the keys' references (any thread)

  /// The reference of `key`, made by `make` if the client does not mirror the key yet, or
  /// mirrors it with another value type; and whether the I/O thread must be woken.
  func reference<Value>(
    key: String, make: (ClientStorage) -> BrokerReference<Value>
  ) -> (BrokerReference<Value>, wake: Bool) {
    lock.withLock {
      if let existing = references[key] as? BrokerReference<Value> { return (existing, false) }
      let reference = make(self)
      references[key] = reference
      machine.add(reference.slot, at: .now, &actions)
      return (reference, wakeOnce())
    }
  }

  /// Applies a mutation to the local value of `reference`'s key, which shows it at once; it
  /// stays pending until the broker confirms it. Returns what `body` returned, and whether the
  /// I/O thread must be woken to send it.
  func mutate<Value: Sendable & Equatable, R>(
    _ slot: KeySlot, of reference: AnyObject,
    _ body: @escaping @Sendable (inout Value) throws -> R
  ) rethrows -> (result: R, wake: Bool) {
    try lock.withLock {
      let replaced = slot.catchUp()
      if let tracker = SharedChangeTracker.current {
        tracker.recordOldValue((replaced ?? slot.machine.local).as(Value.self), of: reference)
      }
      var value = slot.machine.local.as(Value.self)
      // Run here, not inside the machine, so that it may read shared values.
      let result = try body(&value)
      slot.machine.record(value) { value in _ = try? body(&value) }
      return (result, wakeOnce())
    }
  }

  /// The local value of `reference`'s key.
  func value<Value>(_ slot: KeySlot, of reference: AnyObject, as type: Value.Type)
    -> Value
  {
    lock.withLock {
      catchUp(slot, of: reference, as: type)
      return slot.machine.local.as(type)
    }
  }

  /// The local value of `reference`'s key and its errors, read at once.
  func reading<Value>(_ slot: KeySlot, of reference: AnyObject, as type: Value.Type)
    -> SharedReading<Value>
  {
    lock.withLock {
      catchUp(slot, of: reference, as: type)
      return SharedReading(
        value: slot.machine.local.as(type), isLoading: !slot.machine.hasSnapshot,
        loadError: slot.machine.loadError, saveError: slot.machine.saveError)
    }
  }

  /// Brings the key's value up to date; a test store's assertion starts from the value it
  /// replaced.
  private func catchUp<Value>(_ slot: KeySlot, of reference: AnyObject, as type: Value.Type) {
    if let replaced = slot.catchUp(), let tracker = SharedChangeTracker.current {
      tracker.recordOldValue(replaced.as(type), of: reference)
    }
  }

  /// Asks for a fresh snapshot of `key`: the key is stale at once, so a wait cannot end on the
  /// old snapshot. Returns whether the I/O thread must be woken.
  func reload(_ key: String) -> Bool {
    lock.withLock {
      guard let channel = machine.channels[key] else { return false }
      channel.markStale()
      machine.reload([key], at: .now, &actions)
      return wakeOnce()
    }
  }

  /// Whether every key of `keys` (all keys for `nil`) satisfies `condition`.
  func keys(_ keys: [String]?, allSatisfy condition: (any BrokerChannel) -> Bool) -> Bool {
    lock.withLock {
      guard let keys else { return machine.channels.values.allSatisfy(condition) }
      return keys.allSatisfy { key in machine.channels[key].map(condition) ?? true }
    }
  }

  /// How many mutations of all keys await the broker's confirmation.
  var unconfirmedWriteCount: Int {
    lock.withLock { machine.channels.values.reduce(0) { $0 + $1.unconfirmedWriteCount } }
  }

  private func wakeOnce() -> Bool {
    defer { woken = true }
    return !woken
  }

  // MARK: - For the I/O thread

  /// Runs one step of the machine; `actions` collects what it asks for.
  func step(
    _ actions: inout ClientActions, _ body: (inout ClientStateMachine, inout ClientActions) -> Void
  ) {
    lock.withLock { body(&machine, &actions) }
  }

  /// When the machine next wants a turn.
  func deadline(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
    lock.withLock { machine.deadline(now: now) }
  }

  /// Takes what calls from other threads asked for, then runs heartbeats, timers and the writes
  /// that may go out; `actions` collects it all. Calls made after it wake the thread again.
  func turn(at now: ContinuousClock.Instant, _ actions: inout ClientActions) {
    lock.withLock {
      // A state those calls reported may be older than what this thread's steps reported
      // since: the machine says it again, as it is now.
      let reportsState = self.actions.state != nil
      actions.append(&self.actions)
      if reportsState { machine.updateState(&actions) }
      machine.tick(at: now, &actions)
      machine.flush(at: now, &actions)
      woken = false
    }
  }

  /// Lets go of the references (which hold the storage) once the client closes; they keep
  /// their values, and hear nothing more.
  func close() {
    lock.withLock {
      references = [:]
    }
  }

  /// Tells the observers of the keys at `indices` (``ClientActions/changedKeys``).
  func tellObservers(_ indices: [Int]) {
    guard !indices.isEmpty else { return }
    let observers = lock.withLock {
      indices.compactMap { references[machine.channels.keys[$0]] }
    }
    for observer in observers { observer.changed() }
  }
}

/// What the ``ClientStorage`` holds of a key's reference, whatever its value type.
protocol KeyReference: AnyObject, Sendable {
  /// The key's value or errors changed: its observers must hear of it.
  func changed()
}
