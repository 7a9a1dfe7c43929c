/// A key bundled with its default value, so `@Shared(.count) var count` needs no `= 0`.
///
/// ```swift
/// extension SharedReaderKey where Self == InMemoryKey<Int>.Default {
///   static var count: Self { Self[.inMemory("count"), default: 0] }
/// }
/// ```
public struct SharedKeyDefault<Base: SharedReaderKey>: SharedReaderKey {
  /// The wrapped key.
  public let base: Base
  let defaultValue: @Sendable () -> Base.Value

  /// Bundles a key with its default.
  ///
  /// - Parameters:
  ///   - key: The key.
  ///   - value: The default, evaluated only when storage has no value.
  public static subscript(
    _ key: Base, default value: @autoclosure @escaping @Sendable () -> Base.Value
  ) -> Self {
    Self(base: key, defaultValue: value)
  }

  /// The wrapped key's identity.
  public var id: Base.ID { base.id }

  /// Prints as the wrapped key.
  public var description: String { base.description }

  /// Loads through the wrapped key.
  public func load(context: LoadContext<Base.Value>, continuation: LoadContinuation<Base.Value>) {
    base.load(context: context, continuation: continuation)
  }

  /// Subscribes through the wrapped key.
  public func subscribe(
    context: LoadContext<Base.Value>, subscriber: SharedSubscriber<Base.Value>
  ) -> SharedSubscription {
    base.subscribe(context: context, subscriber: subscriber)
  }
}

extension SharedKeyDefault: SharedKey where Base: SharedKey {
  /// Saves through the wrapped key.
  public func save(_ value: Base.Value, context: SaveContext, continuation: SaveContinuation) {
    base.save(value, context: context, continuation: continuation)
  }
}

extension SharedReaderKey {
  /// This key bundled with a default: `InMemoryKey<Int>.Default`.
  public typealias Default = SharedKeyDefault<Self>
}
