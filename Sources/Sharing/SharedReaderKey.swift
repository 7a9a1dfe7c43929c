/// A key that can load and observe a shared value from some storage: the read half of
/// ``SharedKey``.
///
/// Conform to plug a new storage into `@SharedReader` (and, with ``SharedKey``, `@Shared`). The
/// ``id`` decides identity: every `@Shared` built from keys with equal ids in one process is the
/// same reference.
///
/// ```swift
/// struct RemoteConfigKey: SharedReaderKey {
///   var id: String { "remote-config" }
///   func load(context: LoadContext<Config>, continuation: LoadContinuation<Config>) { ... }
///   func subscribe(context: LoadContext<Config>, subscriber: SharedSubscriber<Config>)
///     -> SharedSubscription { ... }
/// }
/// ```
public protocol SharedReaderKey<Value>: Sendable, CustomStringConvertible {
  /// The value stored under the key.
  associatedtype Value: Sendable
  /// The identity of the storage location.
  associatedtype ID: Hashable & Sendable = Self

  /// The identity of the storage location; equal ids share one reference.
  var id: ID { get }

  /// Loads the stored value, synchronously or later, through `continuation`.
  ///
  /// - Parameters:
  ///   - context: Why the value is loaded: first use (with the caller's default) or a user's
  ///     explicit ``Shared/load()``.
  ///   - continuation: Resume it exactly once.
  func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>)

  /// Starts observing changes made to the storage from elsewhere (another process, another
  /// storage client).
  ///
  /// - Parameters:
  ///   - context: The context of the first load.
  ///   - subscriber: Yield each new value (or error) to it.
  /// - Returns: A subscription that stops observing when cancelled.
  func subscribe(context: LoadContext<Value>, subscriber: SharedSubscriber<Value>)
    -> SharedSubscription
}

extension SharedReaderKey where ID == Self, Self: Hashable {
  /// A hashable key is its own identity.
  public var id: Self { self }
}

/// Why a key is asked to load.
public enum LoadContext<Value: Sendable>: Sendable {
  /// First use of the key; the value is what to use when storage has nothing.
  case initialValue(Value)
  /// An explicit ``Shared/load()`` or ``SharedReader/load()``.
  case userInitiated

  /// The default value, when there is one.
  public var initialValue: Value? {
    guard case let .initialValue(value) = self else { return nil }
    return value
  }
}

/// Receives the result of ``SharedReaderKey/load(context:continuation:)``, once.
public struct LoadContinuation<Value: Sendable>: Sendable {
  private let callback: @Sendable (Result<Value?, any Error>) -> Void

  /// Creates a continuation; `nil` means "use the initial value".
  ///
  /// - Parameter callback: Receives the result.
  public init(_ callback: @escaping @Sendable (Result<Value?, any Error>) -> Void) {
    self.callback = callback
  }

  /// Resumes with a loaded value.
  public func resume(returning value: Value) { callback(.success(value)) }

  /// Resumes saying the storage holds nothing: the reference keeps its default.
  public func resumeReturningInitialValue() { callback(.success(nil)) }

  /// Resumes with a failure: the reference reports it as `loadError` and keeps its value.
  public func resume(throwing error: any Error) { callback(.failure(error)) }
}

/// Receives values that storage reports after the first load.
public struct SharedSubscriber<Value: Sendable>: Sendable {
  private let callback: @Sendable (Result<Value?, any Error>) -> Void

  /// Creates a subscriber; `nil` means "storage was cleared, go back to the default".
  ///
  /// - Parameter callback: Receives each result.
  public init(_ callback: @escaping @Sendable (Result<Value?, any Error>) -> Void) {
    self.callback = callback
  }

  /// Reports a new value.
  public func yield(_ value: Value) { callback(.success(value)) }

  /// Reports that storage no longer holds a value.
  public func yieldReturningInitialValue() { callback(.success(nil)) }

  /// Reports a failure (e.g. a corrupt file): the reference keeps its last good value.
  public func yield(throwing error: any Error) { callback(.failure(error)) }
}

/// A running observation of storage; ``cancel()`` stops it, and so does releasing it.
public final class SharedSubscription: Sendable {
  private let onCancel: LockedCallback

  /// Creates a subscription.
  ///
  /// - Parameter cancel: Stops the observation; called at most once.
  public init(_ cancel: @escaping @Sendable () -> Void) {
    onCancel = LockedCallback(cancel)
  }

  deinit {
    onCancel.callOnce()
  }

  /// Stops observing.
  public func cancel() {
    onCancel.callOnce()
  }
}
