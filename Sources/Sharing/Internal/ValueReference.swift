import Foundation
internal import OpenCombine

/// The root reference of a shared value: the value under a lock, its observers, and, for keyed
/// values, the storage it loads from, saves to and hears from.
final class ValueReference<Value: Sendable>: MutableReference, @unchecked Sendable {
  private let lock = NSRecursiveLock()
  private var current: Value
  private let initialValue: Value
  private var loading = false
  private var lastLoadError: (any Error)?
  private var lastSaveError: (any Error)?
  private let persistence: Persistence<Value>?
  private var subscription: SharedSubscription?
  /// Local values handed to the key's `save` that it has not finished writing.
  private var savesInFlight = 0
  /// Storage reported a change while a save was in flight (see ``receiveFromStorage(_:)``).
  private var skippedStorageChange = false
  private let notifier: ReferenceNotifier<Value>
  /// Counts the changes of the value, which orders their notifications.
  private var stamp: UInt64 = 0
  let description: String

  /// An unkeyed value: `Shared(value:)`.
  init(value: Value) {
    current = value
    initialValue = value
    persistence = nil
    description = "Shared<\(Value.self)>(value: …)"
    notifier = ReferenceNotifier(initialValue: value) { [description] in description }
  }

  /// A keyed value: loads from the key's storage and subscribes to its changes.
  init<Key: SharedReaderKey>(key: Key, initialValue: Value) where Key.Value == Value {
    current = initialValue
    self.initialValue = initialValue
    persistence = Persistence(key)
    description = key.description
    notifier = ReferenceNotifier(initialValue: initialValue) { [description] in description }
    loading = true
    persistence?.load(.initialValue(initialValue), LoadContinuation { [weak self] result in
      self?.finishLoad(result)
    })
    subscription = persistence?.subscribe(
      .initialValue(initialValue),
      SharedSubscriber { [weak self] result in self?.receiveFromStorage(result) }
    )
  }

  // MARK: - Reading

  var value: Value {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current,
      let snapshot = tracker.snapshot(of: self, as: Value.self)
    {
      return snapshot
    }
    return liveValue
  }

  var liveValue: Value {
    lock.withLock { current }
  }

  func access() {
    notifier.access()
  }

  var isLoading: Bool { lock.withLock { loading } }
  var loadError: (any Error)? { lock.withLock { lastLoadError } }
  var saveError: (any Error)? { lock.withLock { lastSaveError } }

  var publisher: AnyPublisher<Value, Never> {
    notifier.publisher
  }

  // MARK: - Writing

  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current {
      return try tracker.updateSnapshot(of: self, live: liveValue, body)
    }
    let (result, newValue, stamp): (R, Value, UInt64) = try LockedRegion.run {
      try lock.withLock {
        SharedChangeTracker.current?.recordOldValue(current, of: self)
        var value = current
        let result = try body(&value)
        current = value
        self.stamp += 1
        // Counted in the same critical section as the change, so no storage report read before
        // this save lands can replace the new value.
        if persistence?.save != nil { savesInFlight += 1 }
        return (result, value, self.stamp)
      }
    }
    notifier.notify(newValue, stamp: stamp, onlyTheValue: true)
    persist(newValue, context: .didSet)
    return result
  }

  /// Adopts a value read from storage, unless a local save is in flight: then the read may
  /// predate that save and would step the value back. The change is only noted, and the value
  /// is read again once every save has landed.
  private func replaceFromStorage(_ value: Value, unlessSaving: Bool) {
    let replaced = lock.withLock { () -> UInt64? in
      if unlessSaving, savesInFlight > 0 {
        skippedStorageChange = true
        return nil
      }
      SharedChangeTracker.current?.recordOldValue(current, of: self)
      current = value
      lastLoadError = nil
      stamp += 1
      return stamp
    }
    if let replaced { notifier.notify(value, stamp: replaced) }
  }

  // MARK: - Storage

  private func finishLoad(_ result: Result<Value?, any Error>) {
    lock.withLock { loading = false }
    switch result {
    case let .success(value?): replaceFromStorage(value, unlessSaving: false)
    case .success(nil): break
    case let .failure(error): lock.withLock { lastLoadError = error }
    }
  }

  private func receiveFromStorage(_ result: Result<Value?, any Error>) {
    switch result {
    case let .success(value): replaceFromStorage(value ?? initialValue, unlessSaving: true)
    case let .failure(error): lock.withLock { lastLoadError = error }
    }
  }

  private func persist(_ value: Value, context: SaveContext) {
    guard let save = persistence?.save else { return }
    save(value, context, SaveContinuation { [weak self] result in
      guard let self else { return }
      saveFinished(result)
    })
  }

  /// Books a finished save; after the last one, re-reads storage if it changed meanwhile.
  private func saveFinished(_ result: Result<Void, any Error>) {
    let reread = lock.withLock {
      if case let .failure(error) = result { lastSaveError = error } else { lastSaveError = nil }
      savesInFlight -= 1
      guard savesInFlight == 0, skippedStorageChange else { return false }
      skippedStorageChange = false
      return true
    }
    guard reread, let persistence else { return }
    persistence.load(.initialValue(initialValue), LoadContinuation { [weak self] result in
      // No stored value here means "nothing newer than ours", not "back to the default".
      if case .success(nil) = result { return }
      self?.receiveFromStorage(result)
    })
  }

  func load() async throws {
    guard let persistence else { return }
    lock.withLock { loading = true }
    let value: Value? = try await withCheckedThrowingContinuation { continuation in
      persistence.load(.userInitiated, LoadContinuation { result in
        continuation.resume(with: result)
      })
    }
    lock.withLock { loading = false }
    if let value { replaceFromStorage(value, unlessSaving: false) }
  }

  func save() async throws {
    guard let save = persistence?.save else { return }
    let value = lock.withLock {
      savesInFlight += 1
      return current
    }
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
      save(value, .userInitiated, SaveContinuation { [weak self] result in
        self?.saveFinished(result)
        continuation.resume(with: result)
      })
    }
  }
}

/// A key's storage operations, erased so one reference class serves every key.
struct Persistence<Value: Sendable>: Sendable {
  let load: @Sendable (LoadContext<Value>, LoadContinuation<Value>) -> Void
  let subscribe: @Sendable (LoadContext<Value>, SharedSubscriber<Value>) -> SharedSubscription
  let save: (@Sendable (Value, SaveContext, SaveContinuation) -> Void)?

  init<Key: SharedReaderKey>(_ key: Key) where Key.Value == Value {
    load = { key.load(context: $0, continuation: $1) }
    subscribe = { key.subscribe(context: $0, subscriber: $1) }
    if let writable = key as? any SharedKey<Value> {
      save = { writable.save($0, context: $1, continuation: $2) }
    } else {
      save = nil
    }
  }
}
