import Foundation
internal import OpenCombine
internal import Sharing

/// The reference behind `@Shared(.broker("key"))`: the last value the broker confirmed, plus this
/// process's mutations that the broker has not confirmed yet.
///
/// The local value is always "confirmed + pending", so a write shows at once. When another
/// process's write arrives, or the broker rejects ours, the pending mutations are re-applied on
/// top of the new confirmed value (a rebase) and sent again, as one compare-and-set covering all
/// of them. Each write carries an id; the broker's `lastWrite` tells which ones it applied, so a
/// resent write is never applied twice and no mutation is dropped.
///
/// Writes are pipelined: a new write goes out while earlier ones are in flight, chained to the
/// previous one (`after`), so the broker applies it only on top of that write. A rejection
/// therefore dooms the rest of the chain, and the rebase resends everything at once.
///
/// Other processes' updates are applied lazily: each one only records its bytes, and the decode
/// and rebase happen once per batch the I/O thread reads (``deliverUpdates()``), or when the
/// value is read first. Under a burst, a reader decodes the newest value instead of every one,
/// and a writer with many pending mutations rebases once instead of once per update.
final class BrokerReference<Value: Codable & Sendable & Equatable>: MutableReference,
  BrokerChannel, @unchecked Sendable
{
  private struct Pending {
    let sequence: UInt64
    let mutation: @Sendable (inout Value) -> Void
  }

  private struct SentWrite {
    let id: UInt64
    let coversThrough: UInt64
    let value: Value
    /// The version the write makes if the broker applies it.
    let version: UInt64
  }

  let key: String
  private weak var client: BrokerClient?
  private let lock = NSRecursiveLock()
  private let notifier: ReferenceNotifier<Value>
  private let encoder = QuickJSONEncoder()
  private let decoder = QuickJSONDecoder()

  // Guarded by `lock`.
  private var confirmed: Value
  private var version: UInt64 = 0
  /// The broker instance that confirmed `confirmed` (versions count per instance).
  private var instance: String?
  /// The bytes of a confirmed value newer than `confirmed`, not decoded yet.
  private var undecoded: Data?
  /// `local` is stale: confirmed changed under the pending mutations.
  private var needsRebase = false
  /// `local` changed (while being brought up to date) without observers being told.
  private var unnotified = false
  private var local: Value
  private var pending: [Pending] = []
  private var nextSequence: UInt64 = 1
  /// The newest sequence the broker confirmed: `pending` holds those after it. Asked for on
  /// every turn of the I/O thread, which `pending.isEmpty` would answer through a lookup of
  /// generic metadata.
  private var confirmedThrough: UInt64 = 0
  /// Writes in flight, oldest first.
  private var sent: [SentWrite] = []
  private var synced = false
  private var lastLoadError: (any Error)?
  private var lastSaveError: (any Error)?

  init(key: String, initialValue: Value, client: BrokerClient) {
    self.key = key
    self.client = client
    confirmed = initialValue
    local = initialValue
    notifier = ReferenceNotifier(initialValue: initialValue) { ".broker(\(String(reflecting: key)))" }
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
      catchUp()
      return local
    }
  }
  var isLoading: Bool { lock.withLock { !synced } }
  var loadError: (any Error)? {
    lock.withLock {
      catchUp()
      return lastLoadError
    }
  }
  var saveError: (any Error)? { lock.withLock { lastSaveError } }
  var publisher: AnyPublisher<Value, Never> { notifier.publisher }

  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R {
    if SharedChangeTracker.isAsserting, let tracker = SharedChangeTracker.current {
      return try tracker.updateSnapshot(of: self, live: liveValue, body)
    }
    let result: R = try lock.withLock {
      catchUp()
      SharedChangeTracker.current?.recordOldValue(local, of: self)
      var value = local
      let result = try body(&value)
      local = value
      pending.append(Pending(sequence: nextSequence) { value in _ = try? body(&value) })
      nextSequence += 1
      return result
    }
    notify()
    client?.writesPending()
    return result
  }

  func load() async throws {
    try await client?.resynchronize(key: key)
  }

  func save() async throws {
    try await client?.waitUntilConfirmed(keys: [key])
  }

  // MARK: - BrokerChannel (called on the client's I/O thread)

  var hasUnconfirmedWrites: Bool {
    lock.withLock {
      assert(pending.isEmpty == (nextSequence - 1 <= confirmedThrough))
      return nextSequence - 1 > confirmedThrough
    }
  }
  var unconfirmedWriteCount: Int { lock.withLock { pending.count } }
  var isSynced: Bool { lock.withLock { synced } }

  func nextWrite(id: UInt64) -> (base: UInt64, value: Data, after: UInt64?)? {
    lock.withLock {
      guard synced, let last = pending.last, last.sequence > sent.last?.coversThrough ?? 0 else {
        return nil
      }
      catchUp()
      do {
        let data = try encoder.encode(local)
        let previous = sent.last
        let base = previous?.version ?? version
        sent.append(SentWrite(id: id, coversThrough: last.sequence, value: local, version: base + 1))
        return (base, data, previous?.id)
      } catch {
        lastSaveError = error
        return nil
      }
    }
  }

  func receiveAck(write: UInt64, version: UInt64) {
    let changed = lock.withLock {
      _ = confirmOwn(write: write, version: version)
      return unnotified
    }
    if changed { notify() }
  }

  var confirmedVersion: UInt64 { lock.withLock { version } }

  func seedCopy(for instance: String) -> (origin: String, version: UInt64, value: Data)? {
    lock.withLock {
      guard let origin = self.instance, origin != instance, version > 0 else { return nil }
      if let undecoded { return (origin, version, undecoded) }
      guard let data = try? encoder.encode(confirmed) else { return nil }
      return (origin, version, data)
    }
  }

  func receiveState(version: UInt64, lastWrite: UInt64, value: Data, instance: String) {
    let changed = lock.withLock {
      acknowledge(applied: lastWrite)
      // Writes above `lastWrite` were not applied, and never will be: each attempt has its own
      // id, and a pipelined one cannot land behind one that did not.
      sent = []
      synced = true
      if instance != self.instance || version >= self.version {
        self.instance = instance
        accept(version: version, value: value)
      }
      needsRebase = true
      catchUp()
      return unnotified
    }
    if changed { notify() }
  }

  func receiveUpdate(
    version: UInt64, fromThisClient: Bool, write: UInt64, value: Data, instance: String
  ) -> Bool {
    lock.withLock {
      guard version > self.version, instance == self.instance else { return false }
      let gap = synced && version > self.version + 1
      // Our own write coming back: its value is the one we encoded, no need to decode it (the
      // same assumption `receiveAck` makes), which keeps the writer's CPU free for readers.
      if fromThisClient, confirmOwn(write: write, version: version) { return gap }
      if fromThisClient { acknowledge(applied: write) }
      accept(version: version, value: value)
      needsRebase = true
      return gap
    }
  }

  func deliverUpdates() {
    let changed = lock.withLock {
      catchUp()
      return unnotified
    }
    if changed { notify() }
  }

  func markStale() {
    lock.withLock { synced = false }
  }

  func writeFailed(_ error: (any Error)?) {
    let news = lock.withLock {
      sent = []
      guard let error else { return false }
      let news = lastSaveError == nil
      lastSaveError = error
      return news
    }
    if news { notify() }
  }

  // MARK: - Bookkeeping (under `lock`)

  private func accept(version: UInt64, value: Data) {
    self.version = version
    guard !value.isEmpty else { return }
    undecoded = value
  }

  /// Decodes the newest confirmed value and rebases the pending mutations on it, if either is
  /// due; a changed local value is left for the next notification (`unnotified`).
  private func catchUp() {
    if let data = undecoded {
      undecoded = nil
      let hadError = lastLoadError != nil
      do {
        confirmed = try decoder.decode(Value.self, from: data)
        lastLoadError = nil
      } catch {
        // Keep the last good value; the next write of ours replaces the bad one.
        lastLoadError = BrokerValueError(key: key, type: "\(Value.self)", underlying: error)
      }
      // Observers show the error next to the value: its coming and going is news to them too.
      if hadError != (lastLoadError != nil) { unnotified = true }
    }
    guard needsRebase else { return }
    needsRebase = false
    if rebase() { unnotified = true }
  }

  /// The broker applied our write `write` as `version`: its value becomes the confirmed one.
  /// Returns `false` for a write not in flight (already confirmed, or its chain was dropped).
  ///
  /// No rebase is needed: the write was computed on the chain the local value extends, and any
  /// other process's change published before it would have made the broker reject it.
  private func confirmOwn(write: UInt64, version: UInt64) -> Bool {
    guard let index = sent.firstIndex(where: { $0.id == write }) else { return false }
    let own = sent[index]
    // A cleared error is news to observers, who show it next to the value.
    if lastSaveError != nil || (version > self.version && lastLoadError != nil) { unnotified = true }
    if version > self.version {
      confirmed = own.value
      self.version = version
      undecoded = nil
      lastLoadError = nil
    }
    lastSaveError = nil
    acknowledge(through: own.coversThrough)
    sent.removePrefix(index + 1)
    return true
  }

  /// Drops the mutations covered by the newest write the broker applied (`lastWrite`).
  private func acknowledge(applied lastWrite: UInt64) {
    guard let newest = sent.lastIndex(where: { $0.id <= lastWrite }) else { return }
    acknowledge(through: sent[newest].coversThrough)
    sent.removePrefix(newest + 1)
  }

  private func acknowledge(through sequence: UInt64) {
    // `pending` is in sequence order, so the confirmed ones are a prefix.
    let confirmed = pending.firstIndex { $0.sequence > sequence } ?? pending.count
    pending.removePrefix(confirmed)
    confirmedThrough = max(confirmedThrough, sequence)
  }

  /// Recomputes the local value as confirmed + pending; returns whether it changed.
  private func rebase() -> Bool {
    var value = confirmed
    for mutation in pending { mutation.mutation(&value) }
    guard value != local else { return false }
    SharedChangeTracker.current?.recordOldValue(local, of: self)
    local = value
    return true
  }

  private func notify() {
    lock.withLock { unnotified = false }
    notifier.notify { liveValue }
  }
}

/// A value received from the broker that does not decode as the key's type.
public struct BrokerValueError: Error, CustomStringConvertible {
  /// The key.
  public let key: String
  /// The expected type.
  public let type: String
  /// The decoding error.
  public let underlying: any Error

  /// A readable explanation.
  public var description: String {
    "The broker's value for \"\(key)\" is not a \(type): \(underlying)"
  }
}
