public import Dependencies
import Synchronization

/// A key for a value shared app-wide by name and kept in memory for the life of the process.
///
/// ```swift
/// @Shared(.inMemory("count")) var count = 0
/// ```
public struct InMemoryKey<Value: Sendable>: SharedKey {
  private let name: String
  private let storage: InMemoryStorage

  init(_ name: String) {
    @Dependency(\.defaultInMemoryStorage) var storage
    self.name = name
    self.storage = storage
  }

  /// The name within this key's storage.
  public var id: InMemoryKeyID { InMemoryKeyID(name: name, storage: ObjectIdentifier(storage)) }

  /// `.inMemory("name")`.
  public var description: String { ".inMemory(\(String(reflecting: name)))" }

  /// Returns the stored value, or stores the default on first use.
  public func load(context: LoadContext<Value>, continuation: LoadContinuation<Value>) {
    if let value = storage.value(forKey: name) as? Value {
      continuation.resume(returning: value)
    } else {
      if let initialValue = context.initialValue { storage.set(initialValue, forKey: name) }
      continuation.resumeReturningInitialValue()
    }
  }

  /// Nothing else writes this storage: every user shares the one reference.
  public func subscribe(
    context _: LoadContext<Value>, subscriber _: SharedSubscriber<Value>
  ) -> SharedSubscription {
    SharedSubscription {}
  }

  /// Keeps the value for later references to the same name.
  public func save(_ value: Value, context _: SaveContext, continuation: SaveContinuation) {
    storage.set(value, forKey: name)
    continuation.resume()
  }
}

/// The identity of an ``InMemoryKey``: its name within one storage.
public struct InMemoryKeyID: Hashable, Sendable {
  let name: String
  let storage: ObjectIdentifier
}

extension SharedReaderKey {
  /// A value shared app-wide by name, in memory.
  ///
  /// - Parameter key: The name.
  /// - Returns: The key.
  public static func inMemory<Value>(_ key: String) -> Self where Self == InMemoryKey<Value> {
    InMemoryKey(key)
  }
}

/// Where ``InMemoryKey`` values live: one per process, and a fresh one per test.
public final class InMemoryStorage: Sendable {
  private let values = Mutex<[String: any Sendable]>([:])

  /// Creates empty storage.
  public init() {}

  func value(forKey key: String) -> (any Sendable)? {
    values.withLock { $0[key] }
  }

  func set(_ value: any Sendable, forKey key: String) {
    values.withLock { $0[key] = value }
  }
}

private enum InMemoryStorageKey: DependencyKey {
  static let liveValue = InMemoryStorage()
  static var testValue: InMemoryStorage { InMemoryStorage() }
}

extension DependencyValues {
  /// The storage behind ``SharedReaderKey/inMemory(_:)``; tests get a fresh one each.
  public var defaultInMemoryStorage: InMemoryStorage {
    get { self[InMemoryStorageKey.self] }
    set { self[InMemoryStorageKey.self] = newValue }
  }
}
