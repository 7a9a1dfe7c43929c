public import CustomDump
internal import Dependencies

/// A value shared by reference between features, and optionally persisted or mirrored by a key.
///
/// Copies of a `@Shared` value all point at one reference: a child that receives `$count` from
/// its parent sees the parent's changes and the parent sees the child's.
///
/// ```swift
/// @Reducer
/// struct ParentFeature {
///   @ObservableState
///   struct State { @Shared var count: Int; var child: Child.State }
///   // state.child = Child.State(count: state.$count)
/// }
/// @Reducer
/// struct Settings {
///   @ObservableState
///   struct State { @Shared(.inMemory("count")) var count = 0 }   // app-wide, by key
/// }
/// ```
///
/// Mutations are atomic per call; use ``withLock(_:fileID:filePath:line:column:)`` to read and
/// write in one step (`$count.withLock { $0 += 1 }`).
@propertyWrapper
@dynamicMemberLookup
public struct Shared<Value: Sendable>: Sendable {
  let reference: any MutableReference<Value>

  package init(reference: any MutableReference<Value>) {
    self.reference = reference
  }

  /// Shares a value that is not persisted (the parent creates it, children receive `$value`).
  ///
  /// - Parameter value: The initial value.
  public init(value: Value) {
    self.init(reference: ValueReference(value: value))
  }

  /// Shares a value that is not persisted: `self._count = Shared(count)` in a custom
  /// initializer, as in TCA.
  ///
  /// There is deliberately no `init(wrappedValue:)` without a key: with one, the memberwise
  /// initializer of a state holding `@Shared var count: Int` would take an `Int`, and
  /// `Child.State(count: state.$count)` would not compile.
  ///
  /// - Parameter value: The initial value.
  public init(_ value: Value) {
    self.init(value: value)
  }

  /// Adopts another shared reference: `self._count = count` in a custom initializer.
  ///
  /// - Parameter projectedValue: The shared value to refer to.
  public init(projectedValue: Shared<Value>) {
    self = projectedValue
  }

  /// Shares the value stored under `key`; `wrappedValue` is used only when storage has none.
  ///
  /// ```swift
  /// @Shared(.appStorage("count")) var count = 0
  /// self._count = Shared(wrappedValue: count(), .appStorage("count"))
  /// ```
  ///
  /// - Parameters:
  ///   - wrappedValue: The default, evaluated only when no reference for the key exists yet.
  ///   - key: Where the value lives.
  public init(wrappedValue: @autoclosure () -> Value, _ key: some SharedKey<Value>) {
    @Dependency(\.persistentReferences) var references
    self.init(reference: references.reference(for: key, default: wrappedValue))
  }

  /// Shares the value stored under a key that carries its own default.
  ///
  /// ```swift
  /// extension SharedKey where Self == InMemoryKey<Int>.Default {
  ///   static var count: Self { Self[.inMemory("count"), default: 0] }
  /// }
  /// @Shared(.count) var count
  /// ```
  ///
  /// - Parameter key: The key and its default.
  public init<Key: SharedKey<Value>>(_ key: SharedKeyDefault<Key>) {
    self.init(wrappedValue: key.defaultValue(), key.base)
  }

  /// The current value. Setting it is one atomic write. Reading it inside Swift's
  /// `withObservationTracking` (or Composable's `observe`) tracks every later change, from this
  /// process or, for a mirrored key, from another.
  public var wrappedValue: Value {
    get {
      reference.access()
      return reference.value
    }
    nonmutating set { reference.withLock { $0 = newValue } }
  }

  /// The shared reference itself, to pass to a child (`Child.State(count: $count)`).
  public var projectedValue: Self {
    get { self }
    set { self = newValue }
  }

  /// A shared value for a property of this one, writing through to it: `$stats.count`.
  public subscript<Member: Sendable>(
    dynamicMember keyPath: WritableKeyPath<Value, Member>
  ) -> Shared<Member> {
    Shared<Member>(reference: AppendKeyPathReference(base: reference, keyPath: keyPath))
  }

  /// Reads and mutates the value atomically: no other write lands in between.
  ///
  /// ```swift
  /// state.$stats.withLock { $0.count += 1; $0.maxCount = max($0.maxCount, $0.count) }
  /// ```
  ///
  /// Unlike swift-sharing, the closure is `@escaping @Sendable`: a value mirrored through the
  /// broker keeps each mutation and re-applies it on top of other processes' writes until the
  /// broker confirms it, which is how concurrent increments never get lost. Copy `inout` state
  /// into a local constant before using it inside.
  ///
  /// - Parameters:
  ///   - body: Mutates the value; it may run again on a newer value.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: What `body` returns the first time it runs.
  @discardableResult
  public func withLock<R>(
    _ body: @escaping @Sendable (inout Value) throws -> R,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) rethrows -> R {
    try reference.withLock(body)
  }

  /// Whether the key is still loading its first value. Observation tracks it like the value.
  public var isLoading: Bool {
    reference.access()
    return reference.isLoading
  }

  /// The last load failure (e.g. a corrupt file); the value keeps its last good state.
  /// Observation tracks it like the value.
  public var loadError: (any Error)? {
    reference.access()
    return reference.loadError
  }

  /// The last save failure. Observation tracks it like the value.
  public var saveError: (any Error)? {
    reference.access()
    return reference.saveError
  }

  /// The value, whether it loads, and its errors, from one read: what a view that shows them
  /// all reads each time it draws. Observation tracks it like the value.
  package var reading: SharedReading<Value> {
    reference.access()
    return reference.reading
  }

  /// Reloads the value from storage.
  ///
  /// - Throws: The storage's load error.
  public func load() async throws { try await reference.load() }

  /// Saves the current value to storage now, bypassing throttling.
  ///
  /// - Throws: The storage's save error.
  public func save() async throws { try await reference.save() }

  /// A read-only view of this shared value.
  public var reader: SharedReader<Value> { SharedReader(reference: reference) }
}

extension Shared: Equatable where Value: Equatable {
  /// Compares values. Inside a test store assertion, with both sides on one reference, the left
  /// side (expected) reads the snapshot and the right side (actual) the live value.
  public static func == (lhs: Self, rhs: Self) -> Bool {
    if SharedChangeTracker.isAsserting, lhs.reference === rhs.reference {
      return lhs.reference.value == rhs.reference.liveValue
    }
    return lhs.wrappedValue == rhs.wrappedValue
  }
}

extension Shared: Hashable where Value: Hashable {
  /// Hashes the current value.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(wrappedValue)
  }
}

extension Shared: CustomStringConvertible {
  /// The current value, as `Shared(…)`.
  public var description: String { "Shared(\(wrappedValue))" }
}

extension Shared: CustomDumpRepresentable {
  /// Dumps (and diffs) as the value itself.
  public var customDumpValue: Any { wrappedValue }
}

extension Shared: Identifiable where Value: Identifiable {
  /// The value's identity.
  public var id: Value.ID { wrappedValue.id }
}
