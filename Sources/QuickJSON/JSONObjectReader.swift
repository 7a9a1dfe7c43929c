/// The members of an object in a parsed document, for the code that `@JSONCodable`
/// generates.
public struct JSONObjectReader {
  let tape: JSONTape
  let object: Int

  /// The member named `key`, as the member's type reads itself. The key path, never evaluated,
  /// names the property, so that its type picks between this and the Codable overload.
  public func decode<Root, Value: JSONMember>(
    _: @autoclosure () -> KeyPath<Root, Value>, forKey key: StaticString
  ) throws -> Value {
    guard let node = tape.member(key, of: object) else { return try Value.jsonValueIfMissing() }
    return try Value(jsonValue: JSONValueReader(tape: tape, node: node))
  }

  /// The member named `key`, through its type's Codable conformance (`nil` if it is missing and
  /// the type is optional).
  public func decode<Root, Value: Decodable>(
    _: @autoclosure () -> KeyPath<Root, Value>, forKey key: StaticString
  ) throws -> Value {
    guard let node = tape.member(key, of: object) else {
      guard let optional = Value.self as? any MissingAsNil.Type else { throw LeftToFoundation() }
      return optional.missing as! Value
    }
    let decoder = TapeDecoder(
      tape: tape, node: node, codingPath: [MemberKey(stringValue: "\(key)")])
    return try decoder.decode(Value.self, at: node)
  }
}

/// An optional, which Codable's synthesized conformance decodes as `nil` when its member is
/// missing.
private protocol MissingAsNil {
  static var missing: Self { get }
}

extension Optional: MissingAsNil {
  static var missing: Self { nil }
}
