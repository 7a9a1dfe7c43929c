/// A key that can also save: what `@Shared` needs to persist a value.
///
/// ```swift
/// @Shared(.fileStorage(.documentsDirectory.appending(path: "stats.json"))) var stats = Stats()
/// ```
public protocol SharedKey<Value>: SharedReaderKey {
  /// Saves a value.
  ///
  /// - Parameters:
  ///   - value: The value to store.
  ///   - context: Why: a mutation (`.didSet`) or an explicit ``Shared/save()``.
  ///   - continuation: Resume it exactly once when the save finished or failed.
  func save(_ value: Value, context: SaveContext, continuation: SaveContinuation)
}

/// Why a key is asked to save.
public enum SaveContext: Hashable, Sendable {
  /// The value was mutated.
  case didSet
  /// An explicit ``Shared/save()``; storage should write at once, without throttling.
  case userInitiated
}

/// Receives the result of ``SharedKey/save(_:context:continuation:)``, once.
public struct SaveContinuation: Sendable {
  private let callback: @Sendable (Result<Void, any Error>) -> Void

  /// Creates a continuation.
  ///
  /// - Parameter callback: Receives the result.
  public init(_ callback: @escaping @Sendable (Result<Void, any Error>) -> Void) {
    self.callback = callback
  }

  /// Resumes after a successful save.
  public func resume() { callback(.success(())) }

  /// Resumes with a failure: the reference reports it as `saveError`.
  public func resume(throwing error: any Error) { callback(.failure(error)) }
}
