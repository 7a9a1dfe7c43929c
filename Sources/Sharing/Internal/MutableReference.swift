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
  func load() async throws
  func save() async throws
}
