public import OpenCombine

extension Shared {
  /// The current value, then every change, from any writer (this process's features, storage
  /// written by another process, the broker).
  ///
  /// ```swift
  /// return .publisher { state.$count.publisher.map(Action.countUpdated) }
  /// ```
  ///
  /// Subscribers hear every change in order, with no lock held: on the thread that made it once
  /// that thread leaves every shared value's `withLock`, or on the thread already telling them
  /// of an earlier change. A subscriber may write any shared value, this one included; a write
  /// it makes is told after it returns.
  public var publisher: AnyPublisher<Value, Never> { reference.publisher }

  /// The current value, then every change, as an asynchronous sequence.
  public var values: AsyncStream<Value> { reference.publisher.asyncStream }
}

extension SharedReader {
  /// The current value, then every change.
  public var publisher: AnyPublisher<Value, Never> { reference.publisher }

  /// The current value, then every change, as an asynchronous sequence.
  public var values: AsyncStream<Value> { reference.publisher.asyncStream }
}

extension Publisher where Failure == Never, Output: Sendable {
  /// Bridges to an `AsyncStream` that unsubscribes when iteration stops.
  var asyncStream: AsyncStream<Output> {
    AsyncStream { continuation in
      let cancellable = sink { continuation.yield($0) }
      let box = CancellableBox(cancellable)
      continuation.onTermination = { _ in box.cancel() }
    }
  }
}

/// Carries a subscription into the stream's `@Sendable` termination handler; cancelling an
/// `AnyCancellable` is thread-safe.
private final class CancellableBox: @unchecked Sendable {
  private let cancellable: AnyCancellable
  init(_ cancellable: AnyCancellable) { self.cancellable = cancellable }
  func cancel() { cancellable.cancel() }
}
