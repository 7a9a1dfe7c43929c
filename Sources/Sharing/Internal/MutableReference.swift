package import OpenCombine

/// The reference behind a ``Shared`` or ``SharedReader``: one value, shared by every copy of the
/// wrapper, safe to read and mutate from any thread.
///
/// `package` so storage modules of this project (the broker key) can bring their own reference,
/// e.g. one that keeps pending mutations for rebasing.
package protocol MutableReference<Value>: AnyObject, Sendable, CustomStringConvertible {
  associatedtype Value: Sendable

  /// The value; during a test store assertion, the snapshot taken before the last mutation.
  var value: Value { get }
  /// The live value, ignoring test snapshots.
  var liveValue: Value { get }
  /// Reports a read to Swift's Observation, so whoever tracks it hears of the next change.
  func access()
  /// Mutates the value atomically, then notifies observers and persists.
  ///
  /// The mutation escapes: a reference mirrored by a broker keeps it to re-apply on top of
  /// newer values written by other processes (a rebase), so it must not capture `inout` state.
  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R
  /// The current value, then every change.
  var publisher: AnyPublisher<Value, Never> { get }
  var isLoading: Bool { get }
  var loadError: (any Error)? { get }
  var saveError: (any Error)? { get }
  /// The value and its storage's state at once (a reference with a lock reads them in one go).
  var reading: SharedReading<Value> { get }
  func load() async throws
  func save() async throws
}

extension MutableReference {
  package var reading: SharedReading<Value> {
    SharedReading(value: value, isLoading: isLoading, loadError: loadError, saveError: saveError)
  }
}

/// A shared value with its storage's state, read at once: what a view shows of it.
package struct SharedReading<Value> {
  /// The value, as ``Shared/wrappedValue`` reads it.
  package var value: Value
  /// Whether the key is still loading its first value.
  package var isLoading: Bool
  /// The last load failure.
  package var loadError: (any Error)?
  /// The last save failure.
  package var saveError: (any Error)?

  package init(value: Value, isLoading: Bool, loadError: (any Error)?, saveError: (any Error)?) {
    self.value = value
    self.isLoading = isLoading
    self.loadError = loadError
    self.saveError = saveError
  }
}
