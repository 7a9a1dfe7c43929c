/// A `Codable` type whose JSON is read and written member by member, by code that the
/// `@JSONCodable` macro generates, with the same results as its Codable conformance.
///
/// Codable's containers cost more than a small value's members: the generated code writes the
/// members in the order `.sortedKeys` gives them, and asks for them in that order when it reads.
/// A document written that way is read front to back with no copy of its bytes; any other is
/// parsed first, and each member found by its name. Where it cannot be sure of Codable's result
/// (a member of a type it does not read itself, a NaN to write, a document it does not parse),
/// it throws, and the value goes through its Codable conformance instead.
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
    self = try value.object { try Self(jsonObject: $0) }
  }

  /// Writes the value as an object.
  public func encode(jsonValue value: inout JSONValueWriter) throws {
    try JSONObjectWriter.write(into: &value) { try encode(jsonObject: &$0) }
  }
}
