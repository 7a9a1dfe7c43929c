internal import Dependencies
public import Foundation
import Synchronization

/// A key for a small value (Bool, Int, Double, String, Data, URL, Date, or a `RawRepresentable`
/// of those) persisted in an ``AppStorageSuite`` and shared with other processes.
///
/// ```swift
/// @Shared(.appStorage("count")) var count = 0
/// ```
public struct AppStorageKey<Value: Sendable>: SharedKey {
  private let name: String
  private let suite: AppStorageSuite
  private let toStored: @Sendable (Value) -> AppStorageValue?
  private let fromStored: @Sendable (AppStorageValue) -> Value?

  init(
    _ name: String,
    toStored: @escaping @Sendable (Value) -> AppStorageValue?,
    fromStored: @escaping @Sendable (AppStorageValue) -> Value?
  ) {
    @Dependency(\.defaultAppStorage) var suite
    self.name = name
    self.suite = suite
    self.toStored = toStored
    self.fromStored = fromStored
  }

  /// The name within its suite.
  public var id: AppStorageKeyID { AppStorageKeyID(name: name, suite: ObjectIdentifier(suite)) }

  /// `.appStorage("name")`.
  public var description: String { ".appStorage(\(String(reflecting: name)))" }

  /// Reads the stored value; none means "use the default".
  public func load(context _: LoadContext<Value>, continuation: LoadContinuation<Value>) {
    do {
      guard let stored = try suite.value(forKey: name) else {
        continuation.resumeReturningInitialValue()
        return
      }
      continuation.resume(returning: try decode(stored))
    } catch {
      continuation.resume(throwing: error)
    }
  }

  /// Follows writes by other processes; unchanged values are not re-delivered.
  public func subscribe(
    context _: LoadContext<Value>, subscriber: SharedSubscriber<Value>
  ) -> SharedSubscription {
    let lastSeen = Mutex<AppStorageValue?>(try? suite.value(forKey: name))
    let (name, suite) = (name, suite)
    return suite.observe {
      do {
        let stored = try suite.value(forKey: name)
        let changed = lastSeen.withLock { last in
          defer { last = stored }
          return last != stored
        }
        guard changed else { return }
        guard let stored else { return subscriber.yieldReturningInitialValue() }
        subscriber.yield(try decode(stored))
      } catch {
        subscriber.yield(throwing: error)
      }
    }
  }

  /// Writes the value at once (values are small; each write is one locked file update).
  public func save(_ value: Value, context _: SaveContext, continuation: SaveContinuation) {
    guard let stored = toStored(value) else {
      continuation.resume(throwing: AppStorageError.unsupportedValue(name, "\(Value.self)"))
      return
    }
    do {
      try suite.set(stored, forKey: name)
      continuation.resume()
    } catch {
      continuation.resume(throwing: error)
    }
  }

  private func decode(_ stored: AppStorageValue) throws -> Value {
    guard let value = fromStored(stored) else {
      throw AppStorageError.typeMismatch(name, expected: "\(Value.self)", found: "\(stored)")
    }
    return value
  }
}

/// The identity of an ``AppStorageKey``: a name within one suite.
public struct AppStorageKeyID: Hashable, Sendable {
  let name: String
  let suite: ObjectIdentifier
}

/// Why an ``AppStorageKey`` could not load or save.
public enum AppStorageError: Error, CustomStringConvertible {
  /// The stored value has another type than the key's.
  case typeMismatch(String, expected: String, found: String)
  /// The value's type cannot be stored.
  case unsupportedValue(String, String)

  /// A readable explanation.
  public var description: String {
    switch self {
    case let .typeMismatch(name, expected, found):
      "App storage value \"\(name)\" is \(found), not a \(expected)."
    case let .unsupportedValue(name, type):
      "App storage value \"\(name)\" of type \(type) cannot be stored."
    }
  }
}

/// The types ``AppStorageKey`` stores directly: Bool, Int, Double, String, Data, URL and Date.
public protocol AppStorageStorable: Sendable {}

extension Bool: AppStorageStorable {}
extension Int: AppStorageStorable {}
extension Double: AppStorageStorable {}
extension String: AppStorageStorable {}
extension Data: AppStorageStorable {}
extension URL: AppStorageStorable {}
extension Date: AppStorageStorable {}

extension SharedReaderKey {
  /// A small value persisted in the app storage suite.
  ///
  /// - Parameter key: The value's name.
  /// - Returns: The key.
  public static func appStorage<Value: AppStorageStorable>(_ key: String) -> Self
  where Self == AppStorageKey<Value> {
    AppStorageKey(key, toStored: { AppStorageValue($0) }, fromStored: { $0.anyValue as? Value })
  }

  /// A `RawRepresentable` value persisted by its raw value in the app storage suite.
  ///
  /// - Parameter key: The value's name.
  /// - Returns: The key.
  public static func appStorage<Value: RawRepresentable & Sendable>(_ key: String) -> Self
  where Value.RawValue: AppStorageStorable, Self == AppStorageKey<Value> {
    AppStorageKey(
      key,
      toStored: { AppStorageValue($0.rawValue) },
      fromStored: { ($0.anyValue as? Value.RawValue).flatMap(Value.init(rawValue:)) }
    )
  }
}
