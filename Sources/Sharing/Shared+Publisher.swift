public import OpenCombine

extension Shared {
  /// The current value, then every change, from any writer (this process's features, storage
  /// written by another process, the broker).
  ///
  /// ```swift
  /// return .publisher { state.$count.publisher.map(Action.countUpdated) }
  /// ```
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
