import Foundation
internal import OpenCombine
internal import Sharing

/// The reference behind `@Shared(.broker("key"))`: the lock, the observers, and the key's
/// ``KeyStateMachine``, which holds the value (confirmed + pending mutations) and decides what
/// goes to the broker. A mutation shows locally at once; the client's I/O loop sends it and
/// feeds the broker's answers back through ``handle(_:)``.
final class BrokerReference<Value: Sendable & Equatable>: MutableReference, BrokerChannel,
  @unchecked Sendable
{
  let key: String
  private weak var client: BrokerClient?
  /// Recursive: a mutation re-applied in a rebase may read the value it mutates.
  private let lock = NSRecursiveLock()
  private let notifier: ReferenceNotifier<Value>
  // Guarded by `lock`.
  private var machine: KeyStateMachine<Value>

  init(key: String, initialValue: Value, codec: BrokerCodec<Value>, client: BrokerClient) {
    self.key = key
    self.client = client
    machine = KeyStateMachine(
      key: key, clientID: client.id, initialValue: initialValue, codec: codec,
      heartbeat: client.configuration.heartbeatInterval,
      maxWritesInFlight: client.configuration.maxWritesInFlight
    )
    notifier = ReferenceNotifier(initialValue: initialValue) {
      ".broker(\(String(reflecting: key)))"
    }
    machine.willChange = { [unowned self] old in
      SharedChangeTracker.current?.recordOldValue(old, of: self)
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

  var liveValue: Value {
    lock.withLock {
      machine.catchUp()
      return machine.local
    }
  }
  func access() {
    notifier.access()
  }

  var isLoading: Bool { lock.withLock { !machine.hasSnapshot } }
  var loadError: (any Error)? {
    lock.withLock {
      machine.catchUp()
      return machine.loadError
    }
  }
  var saveError: (any Error)? { lock.withLock { machine.saveError } }
  var publisher: AnyPublisher<Value, Never> { notifier.publisher }

  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current {
      return try tracker.updateSnapshot(of: self, live: liveValue, body)
    }
    let result: R = try lock.withLock { try machine.mutate(body) }
    notifier.notify({ liveValue }, onlyTheValue: true)
    client?.writesPending()
    return result
  }

  func load() async throws {
    try await client?.resynchronize(key: key)
  }

  func save() async throws {
    try await client?.waitUntilConfirmed(keys: [key])
  }

  // MARK: - BrokerChannel

  var hasUnconfirmedWrites: Bool { lock.withLock { machine.hasUnconfirmedWrites } }
  var unconfirmedWriteCount: Int { lock.withLock { machine.unconfirmedWriteCount } }
  var isSynced: Bool { lock.withLock { machine.isSynced } }
  var heldVersion: UInt64? { lock.withLock { machine.heldVersion } }

  func handle(_ event: KeyEvent) -> KeyOutput {
    let output = lock.withLock { machine.handle(event) }
    if output.changed { notify() }
    return output
  }

  func deliverUpdates() {
    if lock.withLock({ machine.deliver() }) { notify() }
  }

  func markStale() {
    lock.withLock { machine.markStale() }
  }

  /// Tells the observers; the machine reported the change under the lock.
  private func notify() {
    notifier.notify { liveValue }
  }
}
