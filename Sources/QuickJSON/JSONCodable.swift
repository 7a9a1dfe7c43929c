/// A `Codable` type whose JSON is read and written member by member, by code that the
/// ``JSONCodable()`` macro generates, with the same results as its Codable conformance.
///
/// Codable's containers cost more than a small value's members: the generated code finds each
/// member by its name in the document and writes the members in the order `.sortedKeys` gives
/// them. Where it cannot be sure of Codable's result (a member of a type it does not read itself,
/// a floating-point number to write, a document it does not parse), it throws, and the value
/// goes through its Codable conformance instead.
public protocol JSONCodable: JSONMember {
  /// Reads the members of `object` into a value, or throws where the document is left to
  /// Codable.
  init(jsonObject object: JSONObjectReader) throws

  /// Writes the members in the order of their keys' bytes, or throws where the value is left
  /// to Codable.
  func encode(jsonObject object: inout JSONObjectWriter) throws
}

extension JSONCodable {
  /// Reads the value from an object.
  public init(jsonValue value: JSONValueReader) throws {
    try self.init(jsonObject: value.object())
  }

  /// Writes the value as an object.
  public func encode(jsonValue value: inout JSONValueWriter) throws {
    try JSONObjectWriter.write(into: &value) { try encode(jsonObject: &$0) }
  }
}

/// Generates a struct's ``JSONCodable`` conformance from its stored properties, as Codable's
/// synthesized conformance reads and writes them: a member per stored property under its name,
/// `nil` optionals left out, a `let` with a value of its own written but not read.
///
/// ```swift
/// @JSONCodable
/// struct Stats: Codable, Equatable {
///   var count = 0
///   var names: [String] = []
///   var best: Int?
/// }
/// ```
///
/// The struct keeps its Codable conformance, which the generated code falls back to: one with
/// `CodingKeys`, its own `init(from:)` or `encode(to:)`, or a property wrapper is refused.
@attached(
  extension, conformances: JSONCodable, names: named(init(jsonObject:)), named(encode(jsonObject:))
)
public macro JSONCodable() = #externalMacro(module: "QuickJSONMacros", type: "JSONCodableMacro")
