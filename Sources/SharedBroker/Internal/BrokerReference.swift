import Foundation
internal import OpenCombine
internal import Sharing

/// The reference behind `@Shared(.broker("key"))`: a façade over its key in the client's
/// ``ClientStorage``, which holds the value (confirmed + pending mutations) in the key's
/// ``KeyMachine``. A mutation shows locally at once; the client's I/O thread sends it and feeds
/// the broker's answers to the machine. The reference keeps the key's lock, which `withLock`
/// bodies run under, and the observers, which the storage tells of every change with its value,
/// under no lock.
final class BrokerReference<Value: Sendable & Equatable>: MutableReference, @unchecked Sendable {
  let key: String
  /// The key's place in the client's machine.
  let index: Int
  private let storage: ClientStorage
  private weak var client: BrokerClient?
  /// The key's lock: one mutation at a time, as `withLock` promises. Recursive: a body may
  /// mutate the key again.
  private let lock = NSRecursiveLock()
  private let notifier: ReferenceNotifier<Value>
  /// What a reference replaced by one of another value type for the same key shows (the
  /// client's keys hold one type each; Sharing reports the clash).
  private let initialValue: Value

  init(
    key: String, index: Int, initialValue: Value, storage: ClientStorage, client: BrokerClient?
  ) {
    self.key = key
    self.index = index
    self.storage = storage
    self.client = client
    self.initialValue = initialValue
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

  var liveValue: Value { liveReading.value }

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
  private var liveReading: SharedReading<Value> {
    storage.reading(index, of: self, as: Value.self)
      ?? SharedReading(value: initialValue, isLoading: false, loadError: nil, saveError: nil)
  }

  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current {
      return try tracker.updateSnapshot(of: self, live: liveValue, body)
    }
    // Observers hear of the write once the thread leaves every shared value's lock.
    return try LockedRegion.run {
      try lock.withLock {
        if let result = try storage.mutate(index, of: self, body) { return result }
        var detached = initialValue
        return try body(&detached)
      }
    }
  }

  func load() async throws {
    try await client?.resynchronize(key: key, index: index)
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
