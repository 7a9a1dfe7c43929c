public import CustomDump
internal import Dependencies

/// A read-only view of a shared value: it sees every change but cannot write.
///
/// ```swift
/// @Reducer
/// struct Banner {
///   @ObservableState
///   struct State { @SharedReader(.appStorage("isOn")) var isOn = false }
/// }
/// Banner.State(isOn: $flag.reader)   // derived from a parent's @Shared
/// ```
@propertyWrapper
@dynamicMemberLookup
public struct SharedReader<Value: Sendable>: Sendable {
  let reference: any MutableReference<Value>

  init(reference: any MutableReference<Value>) {
    self.reference = reference
  }

  /// A constant reader.
  ///
  /// - Parameter value: The value.
  public init(value: Value) {
    self.init(reference: ValueReference(value: value))
  }

  /// Reads another shared value.
  ///
  /// - Parameter shared: The shared value to follow.
  public init(_ shared: Shared<Value>) {
    self.init(reference: shared.reference)
  }

  /// Adopts another reader: `self._count = count` in a custom initializer.
  ///
  /// - Parameter projectedValue: The reader to refer to.
  public init(projectedValue: SharedReader<Value>) {
    self = projectedValue
  }

  /// Reads the value stored under `key`; `wrappedValue` is used only when storage has none.
  ///
  /// - Parameters:
  ///   - wrappedValue: The default.
  ///   - key: Where the value lives.
  public init(wrappedValue: @autoclosure () -> Value, _ key: some SharedReaderKey<Value>) {
    @Dependency(\.persistentReferences) var references
    self.init(reference: references.reference(for: key, default: wrappedValue))
  }

  /// Reads the value stored under a key that carries its own default.
  ///
  /// - Parameter key: The key and its default.
  public init<Key: SharedReaderKey<Value>>(_ key: SharedKeyDefault<Key>) {
    self.init(wrappedValue: key.defaultValue(), key.base)
  }

  /// The current value.
  public var wrappedValue: Value {
    reference.access()
    return reference.value
  }

  /// The reader itself, to pass to a child.
  public var projectedValue: Self {
    get { self }
    set { self = newValue }
  }

  /// A reader for a property of this value.
  public subscript<Member: Sendable>(
    dynamicMember keyPath: WritableKeyPath<Value, Member>
  ) -> SharedReader<Member> {
    SharedReader<Member>(reference: AppendKeyPathReference(base: reference, keyPath: keyPath))
  }

  /// Whether the key is still loading its first value.
  public var isLoading: Bool { reference.isLoading }

  /// The last load failure; the value keeps its last good state.
  public var loadError: (any Error)? { reference.loadError }

  /// Reloads the value from storage.
  ///
  /// - Throws: The storage's load error.
  public func load() async throws { try await reference.load() }
}

extension SharedReader: Equatable where Value: Equatable {
  /// Compares values (snapshot on the left inside a test store assertion, like ``Shared``).
  public static func == (lhs: Self, rhs: Self) -> Bool {
    if SharedChangeTracker.isAsserting, lhs.reference === rhs.reference {
      return lhs.reference.value == rhs.reference.liveValue
    }
    return lhs.wrappedValue == rhs.wrappedValue
  }
}

extension SharedReader: CustomDumpRepresentable {
  /// Dumps (and diffs) as the value itself.
  public var customDumpValue: Any { wrappedValue }
}
