/// The members of an object being written, for the code that `@JSONCodable` generates,
/// which gives them in the order of their keys' bytes (the order of `.sortedKeys`).
public struct JSONObjectWriter {
  private var output = JSONValueWriter(capacity: 0)
  private var hasMembers = false

  /// Writes an object into `value` with the members that `members` adds.
  static func write(
    into value: inout JSONValueWriter, _ members: (inout JSONObjectWriter) throws -> Void
  ) throws {
    var object = JSONObjectWriter()
    // Moved, not copied: the bytes have one owner at a time.
    swap(&object.output, &value)
    object.output.bytes.append(UInt8(ascii: "{"))
    defer { swap(&object.output, &value) }
    try members(&object)
    object.output.bytes.append(UInt8(ascii: "}"))
  }

  /// The member `key`, as its type writes itself (left out if it is a `nil` optional).
  public mutating func encode<Value: JSONMember>(_ value: Value, forKey key: StaticString) throws
  {
    guard !value.isJSONValueOmitted else { return }
    try write(key)
    try value.encode(jsonValue: &output)
  }

  /// A member of a type that is not a ``JSONMember``: the value is left to its Codable
  /// conformance.
  public mutating func encode<Value: Encodable>(_: Value, forKey _: StaticString) throws {
    throw LeftToFoundation()
  }

  /// A dictionary's member: a `nil` value is written, as `null`. Named apart from the generated
  /// code's overloads, which a string literal would otherwise pick this one over.
  mutating func encode<Value: JSONMember>(_ value: Value, forDictionaryKey key: String) throws {
    var key = key
    try key.withUTF8 { try write($0) }
    try value.encode(jsonValue: &output)
  }

  private mutating func write(_ key: StaticString) throws {
    guard key.hasPointerRepresentation else { throw LeftToFoundation() }
    try write(UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
  }

  /// A key and its colon; Foundation's order for a non-ASCII key is left to it.
  private mutating func write(_ key: UnsafeBufferPointer<UInt8>) throws {
    if hasMembers { output.bytes.append(UInt8(ascii: ",")) }
    hasMembers = true
    guard JSONWriter.write(utf8: key, into: &output.bytes) else { throw LeftToFoundation() }
    output.bytes.append(UInt8(ascii: ":"))
  }
}
