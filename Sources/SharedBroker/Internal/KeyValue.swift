internal import Sharing

/// A `.broker` key's value with its type erased, as the ``KeyMachine`` holds it: the key's
/// reference, which knows the type, takes the typed value out with ``as(_:)``.
///
/// Why not a generic machine: the client library is compiled once, never specialized for the
/// user's value type, and unspecialized code asks the Swift runtime for the metadata of every
/// generic type it touches (a generic key machine, its nested types, their optionals), a
/// hash lookup each time, many per received update. An existential costs one type check where
/// the typed value is taken out.
struct KeyValue: Sendable, Equatable {
  private let base: any Sendable & Equatable

  init(_ value: some Sendable & Equatable) {
    base = value
  }

  /// The value's type, as errors name it.
  var typeName: String { "\(type(of: base))" }

  /// The value, which must be a `Value`: a key is mirrored with one value type.
  func `as`<Value>(_ type: Value.Type) -> Value {
    func open(_ stored: some Sendable & Equatable) -> Value { identityCast(stored, to: type) }
    return open(base)
  }

  static func == (lhs: KeyValue, rhs: KeyValue) -> Bool {
    lhs.base.isEqual(to: rhs.base)
  }
}

extension Equatable {
  /// Compares the types first: when they are the same, the other value is taken as `Self`
  /// without the runtime's casts (`as?` also looks up `Optional<Self>`'s metadata every call).
  fileprivate func isEqual(to other: any Equatable) -> Bool {
    guard type(of: other) == Self.self else { return isEqual(casting: other) }
    func open(_ other: some Equatable) -> Self { identityCast(other, to: Self.self) }
    return self == open(other)
  }

  /// Not inlined: a function that may cast with `as?` asks for the metadata on entry, whichever
  /// way it goes.
  @inline(never)
  private func isEqual(casting other: any Equatable) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}
