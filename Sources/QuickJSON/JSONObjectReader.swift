/// The members of an object in a document, for the code that `@JSONCodable` generates, which
/// asks for them in the order of their keys' bytes.
public struct JSONObjectReader {
  let source: JSONSource

  init(_ source: JSONSource) {
    self.source = source
  }

  /// The member named `key`, as the member's type reads itself. The key path, never evaluated,
  /// names the property, so that its type picks between this and the Codable overload.
  public func decode<Root, Value: JSONMember>(
    _: @autoclosure () -> KeyPath<Root, Value>, forKey key: StaticString
  ) throws -> Value {
    switch source {
    case .tape(let tape, let object):
      guard let node = tape.member(key, of: object) else { return try Value.jsonValueIfMissing() }
      return try Value(jsonValue: JSONValueReader(.tape(tape, node: node)))
    case .scanner(let scanner):
      guard try scanner.member(key) else { return try Value.jsonValueIfMissing() }
      return try Value(jsonValue: JSONValueReader(.scanner(scanner)))
    }
  }

  /// The member named `key`, through its type's Codable conformance (`nil` if it is missing and
  /// the type is optional). A scanner leaves the document to the tape.
  public func decode<Root, Value: Decodable>(
    _: @autoclosure () -> KeyPath<Root, Value>, forKey key: StaticString
  ) throws -> Value {
    guard case .tape(let tape, let object) = source else { throw LeftToFoundation() }
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
