import Foundation
internal import OpenCombine
internal import Sharing

/// The reference behind `@Shared(.broker("key"))`: a façade over its key's slot in the client's
/// ``ClientStorage``, which holds the value (confirmed + pending mutations) in the key's
/// ``KeyStateMachine``. A mutation shows locally at once; the client's I/O thread sends it and
/// feeds the broker's answers to the machine. The reference keeps the observers.
final class BrokerReference<Value: Sendable & Equatable>: MutableReference, KeyReference,
  @unchecked Sendable
{
  let key: String
  let slot: KeySlot
  private let storage: ClientStorage
  private weak var client: BrokerClient?
  private let notifier: ReferenceNotifier<Value>

  init(slot: KeySlot, storage: ClientStorage, client: BrokerClient) {
    key = slot.key
    self.slot = slot
    self.storage = storage
    self.client = client
    notifier = ReferenceNotifier(initialValue: slot.machine.local.as(Value.self)) { [key] in
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

  var liveValue: Value { storage.value(slot, of: self, as: Value.self) }

  func access() {
    notifier.access()
  }

  var isLoading: Bool { liveReading.isLoading }
  var loadError: (any Error)? { liveReading.loadError }
  var saveError: (any Error)? { liveReading.saveError }
  var publisher: AnyPublisher<Value, Never> { notifier.publisher }

  var reading: SharedReading<Value> {
    var reading = liveReading
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current,
      let snapshot = tracker.snapshot(of: self, as: Value.self)
    {
      reading.value = snapshot
    }
    return reading
  }

  /// The value and its errors, from one locked read.
  private var liveReading: SharedReading<Value> { storage.reading(slot, of: self, as: Value.self) }

  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current {
      return try tracker.updateSnapshot(of: self, live: liveValue, body)
    }
    let (result, wake) = try storage.mutate(slot, of: self, body)
    notifier.notify({ liveValue }, onlyTheValue: true)
    if wake { client?.wakeIOThread() }
    return result
  }

  func load() async throws {
    try await client?.resynchronize(key: key)
  }

  func save() async throws {
    try await client?.waitUntilConfirmed(keys: [key])
  }

  // MARK: - KeyReference

  func changed() {
    notifier.notify { liveValue }
  }
}
