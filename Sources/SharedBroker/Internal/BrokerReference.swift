import Foundation
internal import OpenCombine
internal import Sharing
import Synchronization

/// The reference behind `@Shared(.broker("key"))`: a façade over its key's ``KeySlot``, which
/// holds the local value (confirmed + pending mutations) for readers. A mutation shows locally
/// at once: it runs under the slot's body lock, is recorded in the slot, and goes to the client's
/// I/O thread through the ``ClientStorage``'s mailbox; that thread sends it and brings the
/// broker's answers and other processes' values back into the slot. Observers are told under no
/// lock.
final class BrokerReference<Value: Sendable & Equatable>: MutableReference, @unchecked Sendable {
  let key: String
  private let slot: KeySlot
  private let storage: ClientStorage
  private weak var client: BrokerClient?
  private let notifier: ReferenceNotifier<Value>

  init(key: String, initialValue: Value, slot: KeySlot, storage: ClientStorage, client: BrokerClient?)
  {
    self.key = key
    self.slot = slot
    self.storage = storage
    self.client = client
    notifier = ReferenceNotifier(initialValue: initialValue) {
      ".broker(\(String(reflecting: key)))"
    }
  }

  var description: String { ".broker(\(String(reflecting: key)))" }

  // MARK: - MutableReference

  var value: Value {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current,
      let snapshot = tracker.snapshot(of: self, as: Value.self)
    {
      return snapshot
    }
    return liveValue
  }

  var liveValue: Value { slot.state.withLock { $0.value }.as(Value.self) }

  func access() {
    notifier.access()
  }

  var isLoading: Bool { slot.state.withLock { $0.isLoading } }
  var loadError: (any Error)? { slot.state.withLock { $0.loadError } }
  var saveError: (any Error)? { slot.state.withLock { $0.saveError } }
  var publisher: AnyPublisher<Value, Never> { notifier.publisher }

  var reading: SharedReading<Value> {
    var reading = slot.state.withLock { state in
      SharedReading(
        value: state.value.as(Value.self), isLoading: state.isLoading,
        loadError: state.loadError, saveError: state.saveError)
    }
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current,
      let snapshot = tracker.snapshot(of: self, as: Value.self)
    {
      reading.value = snapshot
    }
    return reading
  }

  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current {
      return try tracker.updateSnapshot(of: self, live: liveValue, body)
    }
    // Observers hear of the write once the thread leaves every shared value's lock.
    return try LockedRegion.run {
      try slot.body.withLock {
        var value = liveValue
        if let tracker = SharedChangeTracker.current {
          tracker.recordOldValue(value, of: self)
        }
        let result = try body(&value)
        let local = KeyValue(value)
        let (sequence, told) = slot.record(local) { erased in
          var typed = erased.as(Value.self)
          _ = try? body(&typed)
          erased = KeyValue(typed)
        }
        storage.mutated(slot, sequence: sequence, value: local)
        told.deliver(onlyTheValue: true)
        return result
      }
    }
  }

  func load() async throws {
    try await client?.resynchronize(key: key, slot: slot)
  }

  func save() async throws {
    try await client?.waitUntilConfirmed(keys: [key])
  }

  // MARK: - From the storage

  /// The key's value (or its errors) changed: observers hear of `value` unless they already
  /// heard of a newer one (`stamp` orders them).
  func changed(_ value: KeyValue, stamp: UInt64, onlyTheValue: Bool) {
    notifier.notify(value.as(Value.self), stamp: stamp, onlyTheValue: onlyTheValue)
  }
}
