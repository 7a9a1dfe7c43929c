package import Foundation

/// Encodes values (broker values, cluster records, etcd's requests) as `JSONEncoder` with
/// `.sortedKeys` does, byte for byte: small plain values directly, everything else with
/// Foundation.
///
/// Every write encodes the writer's value on its way out, so this is on the path of each update
/// from one process to another: Foundation's encoder took about half of a writer's instructions
/// per write, mostly in checks a plain value does not need (a dynamic cast per value for the
/// types it encodes in its own way, coding paths, key strategies).
///
/// The fast path gives Foundation's bytes or none. A value with a floating-point number (whose
/// formatting it does not reproduce), a type Foundation encodes in its own way (`Date`, `URL`,
/// `Decimal`, any class; `Data` is base64 as Foundation's default writes it), a non-ASCII key
/// (whose order it does not reproduce), a key encoded twice, a `superEncoder` or a value that
/// encodes nothing goes to `JSONEncoder`, which also makes the error a caller sees.
package struct QuickJSONEncoder {
  private let foundation: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return encoder
  }()

  /// An encoder with `.sortedKeys` and Foundation's other defaults.
  package init() {}

  /// Encodes `value` as `JSONEncoder` with `.sortedKeys` does.
  package func encode<T: Encodable>(_ value: T) throws -> Data {
    try codable(value)
  }

  /// Encodes `value` as `encode(_:)` does, through the members' code that `@JSONCodable`
  /// generated, or through its Codable where that code leaves the value to it.
  package func encode<T: JSONCodable>(_ value: T) throws -> Data {
    do {
      return try generated(value)
    } catch {
      return try codable(value)
    }
  }

  /// The fast path alone: `nil` where it leaves the value to Foundation.
  package func quickly<T: Encodable>(_ value: T) -> Data? {
    try? fast(value)
  }

  /// The generated code alone: `nil` where it leaves the value to Codable.
  package func quickly<T: JSONCodable>(_ value: T) -> Data? {
    try? generated(value)
  }

  private func codable<T: Encodable>(_ value: T) throws -> Data {
    do {
      return try fast(value)
    } catch {
      return try foundation.encode(value)
    }
  }

  private func generated<T: JSONCodable>(_ value: T) throws -> Data {
    var writer = JSONValueWriter()
    try value.encode(jsonValue: &writer)
    return Data(writer.bytes)
  }

  /// The fast path, which throws where it leaves the value to Foundation (no `T?` on the way, as
  /// in ``QuickJSONDecoder``).
  private func fast<T: Encodable>(_ value: T) throws -> Data {
    let encoder = PieceEncoder(state: EncodingState(), codingPath: [])
    try encoder.encode(value)
    guard !encoder.state.bailed, let piece = encoder.piece else { throw LeftToFoundation() }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(128)
    try piece.write(into: &bytes)
    return Data(bytes)
  }
}

/// Whether anything along the way asked for what only Foundation encodes; shared by the nested
/// encoders, because containers cannot throw from every call that may need to give up.
private final class EncodingState {
  var bailed = false
}

/// An encoded value, kept until its objects' keys can be sorted.
private enum Piece {
  case signed(Int64)
  case unsigned(UInt64)
  /// Finite: a NaN or an infinity is Foundation's to refuse.
  case double(Double)
  /// `true`, `false` or `null`.
  case literal(StaticString)
  case string(String)
  case object(ObjectPiece)
  case array(ArrayPiece)

  static func bool(_ value: Bool) -> Piece { .literal(value ? "true" : "false") }

  func write(into bytes: inout [UInt8]) throws {
    switch self {
    case let .signed(value):
      if value < 0 { bytes.append(UInt8(ascii: "-")) }
      JSONWriter.write(decimal: value.magnitude, into: &bytes)
    case let .unsigned(value):
      JSONWriter.write(decimal: value, into: &bytes)
    case let .double(value):
      guard JSONWriter.write(double: value, into: &bytes) else { throw LeftToFoundation() }
    case let .literal(text):
      text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    case let .string(text):
      JSONWriter.write(string: text, into: &bytes)
    case let .object(object):
      try Self.write(members: object.members, into: &bytes)
    case let .array(array):
      bytes.append(UInt8(ascii: "["))
      for (index, element) in array.elements.enumerated() {
        if index > 0 { bytes.append(UInt8(ascii: ",")) }
        try element.write(into: &bytes)
      }
      bytes.append(UInt8(ascii: "]"))
    }
  }

  /// Foundation sorts keys by their bytes; for ASCII keys, the only ones this path writes, that
  /// is `String`'s order. Objects usually come sorted already (or are small).
  private static func write(
    members: [(key: String, value: Piece)], into bytes: inout [UInt8]
  ) throws {
    var members = members
    if members.indices.dropFirst().contains(where: { members[$0 - 1].key >= members[$0].key }) {
      members.sort { $0.key < $1.key }
      // A key encoded twice: which one Foundation keeps is its business.
      if members.indices.dropFirst().contains(where: { members[$0 - 1].key == members[$0].key }) {
        throw LeftToFoundation()
      }
    }
    bytes.append(UInt8(ascii: "{"))
    for (index, member) in members.enumerated() {
      if index > 0 { bytes.append(UInt8(ascii: ",")) }
      guard JSONWriter.write(string: member.key, into: &bytes) else { throw LeftToFoundation() }
      bytes.append(UInt8(ascii: ":"))
      try member.value.write(into: &bytes)
    }
    bytes.append(UInt8(ascii: "}"))
  }
}

/// The members of an object, in the order they were encoded.
private final class ObjectPiece {
  var members: [(key: String, value: Piece)] = []
}

/// The elements of an array.
private final class ArrayPiece {
  var elements: [Piece] = []
}

/// An `Encoder` for one value, which ends up as its `piece`.
private final class PieceEncoder: Encoder {
  let state: EncodingState
  let codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }
  var piece: Piece?

  init(state: EncodingState, codingPath: [any CodingKey]) {
    self.state = state
    self.codingPath = codingPath
  }

  func container<Key: CodingKey>(keyedBy _: Key.Type) -> KeyedEncodingContainer<Key> {
    // Asked again, the container writes into the same object, as Foundation's does.
    let object: ObjectPiece
    switch piece {
    case let .object(existing): object = existing
    case nil:
      object = ObjectPiece()
      piece = .object(object)
    default:
      state.bailed = true
      object = ObjectPiece()
    }
    return KeyedEncodingContainer(PieceKeyedContainer<Key>(encoder: self, object: object))
  }

  func unkeyedContainer() -> any UnkeyedEncodingContainer {
    let array: ArrayPiece
    switch piece {
    case let .array(existing): array = existing
    case nil:
      array = ArrayPiece()
      piece = .array(array)
    default:
      state.bailed = true
      array = ArrayPiece()
    }
    return PieceUnkeyedContainer(encoder: self, array: array)
  }

  func singleValueContainer() -> any SingleValueEncodingContainer {
    PieceSingleValueContainer(encoder: self)
  }

  // MARK: - Values (shared by the containers)

  /// Marks the encode as Foundation's, and returns the error to throw.
  func bail() -> any Error {
    state.bailed = true
    return LeftToFoundation()
  }

  /// This encoder's own value, as a single value container sets it.
  func set(_ value: Piece) throws {
    guard piece == nil else { throw bail() }
    piece = value
  }

  /// `value` itself (the top level, a single value).
  func encode<T: Encodable>(_ value: T) throws {
    if let simple = try simplePiece(value) { return try set(simple) }
    try value.encode(to: self)
  }

  /// `value` as a member or element: through an encoder of its own unless it is simple.
  func piece<T: Encodable>(of value: T, key: any CodingKey) throws -> Piece {
    if let simple = try simplePiece(value) { return simple }
    let child = PieceEncoder(state: state, codingPath: codingPath + [key])
    try value.encode(to: child)
    // A value that encodes nothing: Foundation writes an empty object.
    guard let piece = child.piece else { throw bail() }
    return piece
  }

  /// The types common as elements of arrays and dictionaries, without an encoder of their own;
  /// `nil` for the rest.
  private func simplePiece<T: Encodable>(_ value: T) throws -> Piece? {
    if T.self == Int.self { return .signed(Int64(value as! Int)) }
    if T.self == String.self { return .string(value as! String) }
    if T.self == Bool.self { return .bool(value as! Bool) }
    if T.self == Double.self { return .double(value as! Double) }
    // Foundation's default strategy: base64 in a string.
    if T.self == Data.self { return .string((value as! Data).base64EncodedString()) }
    if T.self == Date.self || T.self == URL.self || T.self == Decimal.self
      || T.self == Float.self || T.self is AnyClass
    {
      throw bail()
    }
    return nil
  }
}


private struct PieceKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
  let encoder: PieceEncoder
  let object: ObjectPiece

  var codingPath: [any CodingKey] { encoder.codingPath }

  private func add(_ piece: Piece, _ key: Key) {
    object.members.append((key.stringValue, piece))
  }

  func encodeNil(forKey key: Key) throws { add(.literal("null"), key) }
  func encode(_ value: Bool, forKey key: Key) throws {
    add(.bool(value), key)
  }
  func encode(_ value: String, forKey key: Key) throws { add(.string(value), key) }
  func encode(_ value: Double, forKey key: Key) throws { add(.double(value), key) }
  func encode(_: Float, forKey _: Key) throws { throw encoder.bail() }
  func encode(_ value: Int, forKey key: Key) throws { add(.signed(Int64(value)), key) }
  func encode(_ value: Int8, forKey key: Key) throws { add(.signed(Int64(value)), key) }
  func encode(_ value: Int16, forKey key: Key) throws { add(.signed(Int64(value)), key) }
  func encode(_ value: Int32, forKey key: Key) throws { add(.signed(Int64(value)), key) }
  func encode(_ value: Int64, forKey key: Key) throws { add(.signed(Int64(value)), key) }
  func encode(_ value: UInt, forKey key: Key) throws { add(.unsigned(UInt64(value)), key) }
  func encode(_ value: UInt8, forKey key: Key) throws { add(.unsigned(UInt64(value)), key) }
  func encode(_ value: UInt16, forKey key: Key) throws { add(.unsigned(UInt64(value)), key) }
  func encode(_ value: UInt32, forKey key: Key) throws { add(.unsigned(UInt64(value)), key) }
  func encode(_ value: UInt64, forKey key: Key) throws { add(.unsigned(UInt64(value)), key) }
  func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
    add(try encoder.piece(of: value, key: key), key)
  }

  func nestedContainer<NestedKey: CodingKey>(
    keyedBy _: NestedKey.Type, forKey key: Key
  ) -> KeyedEncodingContainer<NestedKey> {
    let nested = ObjectPiece()
    add(.object(nested), key)
    let child = PieceEncoder(state: encoder.state, codingPath: codingPath + [key])
    return KeyedEncodingContainer(PieceKeyedContainer<NestedKey>(encoder: child, object: nested))
  }

  func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
    let nested = ArrayPiece()
    add(.array(nested), key)
    let child = PieceEncoder(state: encoder.state, codingPath: codingPath + [key])
    return PieceUnkeyedContainer(encoder: child, array: nested)
  }

  func superEncoder() -> any Encoder {
    encoder.state.bailed = true
    return encoder
  }

  func superEncoder(forKey _: Key) -> any Encoder { superEncoder() }
}

private struct PieceUnkeyedContainer: UnkeyedEncodingContainer {
  let encoder: PieceEncoder
  let array: ArrayPiece

  var codingPath: [any CodingKey] { encoder.codingPath }
  var count: Int { array.elements.count }

  private func add(_ piece: Piece) { array.elements.append(piece) }

  mutating func encodeNil() throws { add(.literal("null")) }
  mutating func encode(_ value: Bool) throws { add(.bool(value)) }
  mutating func encode(_ value: String) throws { add(.string(value)) }
  mutating func encode(_ value: Double) throws { add(.double(value)) }
  mutating func encode(_: Float) throws { throw encoder.bail() }
  mutating func encode(_ value: Int) throws { add(.signed(Int64(value))) }
  mutating func encode(_ value: Int8) throws { add(.signed(Int64(value))) }
  mutating func encode(_ value: Int16) throws { add(.signed(Int64(value))) }
  mutating func encode(_ value: Int32) throws { add(.signed(Int64(value))) }
  mutating func encode(_ value: Int64) throws { add(.signed(Int64(value))) }
  mutating func encode(_ value: UInt) throws { add(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt8) throws { add(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt16) throws { add(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt32) throws { add(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt64) throws { add(.unsigned(UInt64(value))) }
  mutating func encode<T: Encodable>(_ value: T) throws {
    add(try encoder.piece(of: value, key: IndexKey(count)))
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy _: NestedKey.Type
  ) -> KeyedEncodingContainer<NestedKey> {
    let nested = ObjectPiece()
    let child = PieceEncoder(state: encoder.state, codingPath: codingPath + [IndexKey(count)])
    add(.object(nested))
    return KeyedEncodingContainer(PieceKeyedContainer<NestedKey>(encoder: child, object: nested))
  }

  mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let nested = ArrayPiece()
    let child = PieceEncoder(state: encoder.state, codingPath: codingPath + [IndexKey(count)])
    add(.array(nested))
    return PieceUnkeyedContainer(encoder: child, array: nested)
  }

  mutating func superEncoder() -> any Encoder {
    encoder.state.bailed = true
    return encoder
  }
}

private struct PieceSingleValueContainer: SingleValueEncodingContainer {
  let encoder: PieceEncoder

  var codingPath: [any CodingKey] { encoder.codingPath }

  mutating func encodeNil() throws { try encoder.set(.literal("null")) }
  mutating func encode(_ value: Bool) throws { try encoder.set(.bool(value)) }
  mutating func encode(_ value: String) throws { try encoder.set(.string(value)) }
  mutating func encode(_ value: Double) throws { try encoder.set(.double(value)) }
  mutating func encode(_: Float) throws { throw encoder.bail() }
  mutating func encode(_ value: Int) throws { try encoder.set(.signed(Int64(value))) }
  mutating func encode(_ value: Int8) throws { try encoder.set(.signed(Int64(value))) }
  mutating func encode(_ value: Int16) throws { try encoder.set(.signed(Int64(value))) }
  mutating func encode(_ value: Int32) throws { try encoder.set(.signed(Int64(value))) }
  mutating func encode(_ value: Int64) throws { try encoder.set(.signed(Int64(value))) }
  mutating func encode(_ value: UInt) throws { try encoder.set(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt8) throws { try encoder.set(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt16) throws { try encoder.set(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt32) throws { try encoder.set(.unsigned(UInt64(value))) }
  mutating func encode(_ value: UInt64) throws { try encoder.set(.unsigned(UInt64(value))) }
  mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encode(value) }
}
