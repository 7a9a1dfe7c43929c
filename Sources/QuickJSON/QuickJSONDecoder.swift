package import Foundation

/// Decodes small plain documents (broker values, cluster records, etcd's answers) straight from
/// a ``JSONTape``, everything else with Foundation's `JSONDecoder`. A ``JSONCodable`` type's
/// generated code first reads the document in order with a ``JSONScanner``, then from the tape.
///
/// Every reader decodes every update it shows, so this is on the path of each update from one
/// process to another: Foundation's decoder took about 30% of a reader's I/O thread, mostly in
/// work a small value does not need (a dictionary of `String` keys per object, coding paths).
///
/// The fast path gives Foundation's result or none. A document the tape refuses, a type that
/// Foundation decodes in its own way (`Date`, `URL`, `Decimal`; `Data` is read as base64, as
/// Foundation's default reads it) or whose rounding this path does not reproduce (`Float`), and
/// any decode during which an error was thrown, even one the type caught itself, go to
/// `JSONDecoder`, which also makes the error a caller sees, but for an integer out of its
/// type's range, which Foundation reports without saying where.
package struct QuickJSONDecoder {
  /// Larger documents go to Foundation: the fast path is meant for small values.
  static let maxBytes = 4096

  private let foundation = JSONDecoder()

  /// A decoder with Foundation's default options.
  package init() {}

  /// Decodes `data` as `T`, as `JSONDecoder().decode(_:from:)` does, except that an integer the
  /// type cannot hold is reported with its field and the type's range.
  package func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
    try decode(T.self, from: data, tape: Self.tape(of: data))
  }

  /// Decodes `data` as `decode(_:from:)` does, through the members' code that `@JSONCodable`
  /// generated, or through `T`'s Codable where that code leaves the document to it.
  package func decode<T: JSONCodable>(_ type: T.Type, from data: Data) throws -> T {
    do {
      return try scanned(T.self, from: data)
    } catch {
      let tape = Self.tape(of: data)
      do {
        return try generated(T.self, on: tape)
      } catch {
        return try decode(T.self, from: data, tape: tape)
      }
    }
  }

  /// The fast path alone: `nil` where it leaves the document to Foundation.
  package func quickly<T: Decodable>(_: T.Type, from data: Data) -> T? {
    try? fast(T.self, on: Self.tape(of: data))
  }

  /// The generated code alone, reading the document in order or from its tape: `nil` where it
  /// leaves the document to Codable.
  package func quickly<T: JSONCodable>(_: T.Type, from data: Data) -> T? {
    (try? scanned(T.self, from: data)) ?? (try? generated(T.self, on: Self.tape(of: data)))
  }

  /// The generated code reading the document in order alone: `nil` where it leaves the document
  /// to the tape.
  package func scanning<T: JSONCodable>(_: T.Type, from data: Data) -> T? {
    try? scanned(T.self, from: data)
  }

  private func decode<T: Decodable>(_: T.Type, from data: Data, tape: JSONTape?) throws -> T {
    do {
      return try fast(T.self, on: tape)
    } catch {
      do {
        return try foundation.decode(T.self, from: data)
      } catch let error as DecodingError {
        // Foundation says only "not valid JSON", with no path, for such an integer.
        if case .dataCorrupted(let context) = error, context.codingPath.isEmpty,
          let outOfRange = tape?.outOfRange
        {
          throw outOfRange
        }
        throw error
      }
    }
  }

  /// The tape of a document small and plain enough for the fast path.
  private static func tape(of data: Data) -> JSONTape? {
    data.count <= maxBytes ? JSONTape(data) : nil
  }

  /// The fast path, which throws where it leaves the document to Foundation. No `T?` on the way:
  /// callers are generic, and the runtime would look up that type's metadata on every decode.
  private func fast<T: Decodable>(_: T.Type, on tape: JSONTape?) throws -> T {
    guard let tape else { throw LeftToFoundation() }
    let value = try TapeDecoder(tape: tape, codingPath: []).decode(T.self, at: 0)
    guard !tape.bailed else { throw LeftToFoundation() }
    return value
  }

  /// The generated code reading the document front to back, which throws where it leaves the
  /// document to the tape: no copy of the bytes and no nodes, for the plain documents that
  /// `.sortedKeys` writes.
  private func scanned<T: JSONCodable>(_: T.Type, from data: Data) throws -> T {
    try data.withUnsafeBytes { raw in
      let scanner = JSONScanner(raw.bindMemory(to: UInt8.self))
      let value = try T(jsonValue: JSONValueReader(.scanner(scanner)))
      try scanner.end()
      return value
    }
  }

  /// The generated code's path, which throws where it leaves the document to Codable.
  private func generated<T: JSONCodable>(_: T.Type, on tape: JSONTape?) throws -> T {
    guard let tape else { throw LeftToFoundation() }
    let value = try T(jsonValue: JSONValueReader(.tape(tape, node: 0)))
    guard !tape.bailed else { throw LeftToFoundation() }
    return value
  }
}

/// The coding-path key of an object member, for errors.
struct MemberKey: CodingKey {
  let stringValue: String
  var intValue: Int? { nil }
  init(stringValue: String) { self.stringValue = stringValue }
  init?(intValue _: Int) { nil }
}

/// A `Decoder` over one value of a tape.
final class TapeDecoder: Decoder {
  let tape: JSONTape
  let node: Int
  let codingPath: [any CodingKey]
  var userInfo: [CodingUserInfoKey: Any] { [:] }

  init(tape: JSONTape, node: Int = 0, codingPath: [any CodingKey]) {
    self.tape = tape
    self.node = node
    self.codingPath = codingPath
  }

  func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
    guard tape.nodes[node].kind == .object else { throw bail() }
    return KeyedDecodingContainer(TapeKeyedContainer<Key>(decoder: self, object: node))
  }

  func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
    guard tape.nodes[node].kind == .array else { throw bail() }
    return TapeUnkeyedContainer(decoder: self, array: node)
  }

  func singleValueContainer() throws -> any SingleValueDecodingContainer {
    TapeSingleValueContainer(decoder: self)
  }

  // MARK: - Values (shared by the containers)

  /// Marks the tape so that the result is not used, and returns the error to throw.
  func bail() -> any Error {
    tape.bailed = true
    return LeftToFoundation()
  }

  func child(_ node: Int, key: any CodingKey) -> TapeDecoder {
    TapeDecoder(tape: tape, node: node, codingPath: codingPath + [key])
  }

  func decode<T: Decodable>(_: T.Type, at node: Int, key: (any CodingKey)? = nil) throws -> T {
    // Decoded without a decoder of their own; common as elements of arrays and dictionaries.
    if T.self == Int.self { return try integer(Int.self, at: node) as! T }
    if T.self == String.self { return try string(at: node) as! T }
    if T.self == Double.self { return try double(at: node) as! T }
    if T.self == Bool.self { return try bool(at: node) as! T }
    // Foundation's default strategy: base64 in a string, refused unless it decodes whole.
    if T.self == Data.self {
      guard let data = Data(base64Encoded: try string(at: node)) else { throw bail() }
      return data as! T
    }
    if T.self == Date.self || T.self == URL.self || T.self == Decimal.self {
      throw bail()
    }
    // Without a key, `node` is this decoder's own value (the top level, a single value).
    guard let key else { return try T(from: self) }
    return try T(from: child(node, key: key))
  }

  func isNull(at node: Int) -> Bool { tape.nodes[node].kind == .null }

  func bool(at node: Int) throws -> Bool {
    guard let value = tape.bool(at: node) else { throw bail() }
    return value
  }

  func string(at node: Int) throws -> String {
    guard let value = tape.string(at: node) else { throw bail() }
    return value
  }

  func integer<T: FixedWidthInteger>(_: T.Type, at node: Int) throws -> T {
    guard let value = tape.integer(T.self, at: node) else {
      throw tape.isInteger(at: node) ? outOfRange(T.self, at: node) : bail()
    }
    return value
  }

  /// Notes which field holds an integer that `T` cannot hold, for the error Foundation gives
  /// without naming it, and returns the error to throw.
  private func outOfRange<T: FixedWidthInteger>(_: T.Type, at node: Int) -> any Error {
    if tape.outOfRange == nil {
      tape.outOfRange = DecodingError.dataCorrupted(
        DecodingError.Context(
          codingPath: path(to: node),
          debugDescription: "\(tape.text(tape.nodes[node])) is outside the range of \(T.self) "
            + "(\(T.min)...\(T.max))."
        ))
    }
    return bail()
  }

  /// The coding path of `node`: this decoder's own value, or a member or element of it.
  private func path(to node: Int) -> [any CodingKey] {
    guard node != self.node else { return codingPath }
    if tape.nodes[self.node].kind == .object {
      // A member's key is the node just before its value.
      return codingPath + [MemberKey(stringValue: tape.string(tape.nodes[node - 1]))]
    }
    var element = self.node + 1
    var index = 0
    while element != node {
      element = tape.nodes[element].next
      index += 1
    }
    return codingPath + [IndexKey(index)]
  }

  func double(at node: Int) throws -> Double {
    guard let value = tape.double(at: node) else { throw bail() }
    return value
  }
}

private struct TapeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
  let decoder: TapeDecoder
  let object: Int

  var codingPath: [any CodingKey] { decoder.codingPath }

  var allKeys: [Key] {
    var keys: [Key] = []
    var index = object + 1
    for _ in 0..<decoder.tape.nodes[object].count {
      if let key = Key(stringValue: decoder.tape.string(decoder.tape.nodes[index])) {
        keys.append(key)
      }
      index = decoder.tape.nodes[index + 1].next
    }
    return keys
  }

  /// The node of `key`'s value, if the object has it.
  private func find(_ key: Key) -> Int? {
    decoder.tape.member(key.stringValue, of: object)
  }

  private func value(_ key: Key) throws -> Int {
    guard let node = find(key) else { throw decoder.bail() }
    return node
  }

  func contains(_ key: Key) -> Bool { find(key) != nil }
  func decodeNil(forKey key: Key) throws -> Bool { decoder.isNull(at: try value(key)) }
  func decode(_: Bool.Type, forKey key: Key) throws -> Bool { try decoder.bool(at: value(key)) }
  func decode(_: String.Type, forKey key: Key) throws -> String {
    try decoder.string(at: value(key))
  }
  func decode(_: Double.Type, forKey key: Key) throws -> Double {
    try decoder.double(at: value(key))
  }
  func decode(_: Float.Type, forKey _: Key) throws -> Float { throw decoder.bail() }
  func decode(_: Int.Type, forKey key: Key) throws -> Int {
    try decoder.integer(Int.self, at: value(key))
  }
  func decode(_: Int8.Type, forKey key: Key) throws -> Int8 {
    try decoder.integer(Int8.self, at: value(key))
  }
  func decode(_: Int16.Type, forKey key: Key) throws -> Int16 {
    try decoder.integer(Int16.self, at: value(key))
  }
  func decode(_: Int32.Type, forKey key: Key) throws -> Int32 {
    try decoder.integer(Int32.self, at: value(key))
  }
  func decode(_: Int64.Type, forKey key: Key) throws -> Int64 {
    try decoder.integer(Int64.self, at: value(key))
  }
  func decode(_: Int128.Type, forKey key: Key) throws -> Int128 {
    try decoder.integer(Int128.self, at: value(key))
  }
  func decode(_: UInt.Type, forKey key: Key) throws -> UInt {
    try decoder.integer(UInt.self, at: value(key))
  }
  func decode(_: UInt8.Type, forKey key: Key) throws -> UInt8 {
    try decoder.integer(UInt8.self, at: value(key))
  }
  func decode(_: UInt16.Type, forKey key: Key) throws -> UInt16 {
    try decoder.integer(UInt16.self, at: value(key))
  }
  func decode(_: UInt32.Type, forKey key: Key) throws -> UInt32 {
    try decoder.integer(UInt32.self, at: value(key))
  }
  func decode(_: UInt64.Type, forKey key: Key) throws -> UInt64 {
    try decoder.integer(UInt64.self, at: value(key))
  }
  func decode(_: UInt128.Type, forKey key: Key) throws -> UInt128 {
    try decoder.integer(UInt128.self, at: value(key))
  }

  func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T {
    try decoder.decode(T.self, at: value(key), key: key)
  }

  func nestedContainer<NestedKey: CodingKey>(
    keyedBy type: NestedKey.Type, forKey key: Key
  ) throws -> KeyedDecodingContainer<NestedKey> {
    try decoder.child(value(key), key: key).container(keyedBy: type)
  }

  func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
    try decoder.child(value(key), key: key).unkeyedContainer()
  }

  func superDecoder() throws -> any Decoder { throw decoder.bail() }
  func superDecoder(forKey _: Key) throws -> any Decoder { throw decoder.bail() }
}

private struct TapeUnkeyedContainer: UnkeyedDecodingContainer {
  let decoder: TapeDecoder
  let count: Int?
  private(set) var currentIndex = 0
  /// The node of the element at `currentIndex`.
  private var cursor: Int

  init(decoder: TapeDecoder, array: Int) {
    self.decoder = decoder
    count = decoder.tape.nodes[array].count
    cursor = array + 1
  }

  var codingPath: [any CodingKey] { decoder.codingPath }
  var isAtEnd: Bool { currentIndex >= count ?? 0 }

  /// Hands the current element's node to `body`, moving on only if it succeeds.
  private mutating func next<T>(_ body: (TapeDecoder, Int) throws -> T) throws -> T {
    guard !isAtEnd else { throw decoder.bail() }
    let value = try body(decoder, cursor)
    cursor = decoder.tape.nodes[cursor].next
    currentIndex += 1
    return value
  }

  mutating func decodeNil() throws -> Bool {
    guard !isAtEnd else { throw decoder.bail() }
    guard decoder.isNull(at: cursor) else { return false }
    return try next { _, _ in true }
  }

  mutating func decode(_: Bool.Type) throws -> Bool { try next { try $0.bool(at: $1) } }
  mutating func decode(_: String.Type) throws -> String { try next { try $0.string(at: $1) } }
  mutating func decode(_: Double.Type) throws -> Double { try next { try $0.double(at: $1) } }
  mutating func decode(_: Float.Type) throws -> Float { throw decoder.bail() }
  mutating func decode(_: Int.Type) throws -> Int {
    try next { try $0.integer(Int.self, at: $1) }
  }
  mutating func decode(_: Int8.Type) throws -> Int8 {
    try next { try $0.integer(Int8.self, at: $1) }
  }
  mutating func decode(_: Int16.Type) throws -> Int16 {
    try next { try $0.integer(Int16.self, at: $1) }
  }
  mutating func decode(_: Int32.Type) throws -> Int32 {
    try next { try $0.integer(Int32.self, at: $1) }
  }
  mutating func decode(_: Int64.Type) throws -> Int64 {
    try next { try $0.integer(Int64.self, at: $1) }
  }
  mutating func decode(_: Int128.Type) throws -> Int128 {
    try next { try $0.integer(Int128.self, at: $1) }
  }
  mutating func decode(_: UInt.Type) throws -> UInt {
    try next { try $0.integer(UInt.self, at: $1) }
  }
  mutating func decode(_: UInt8.Type) throws -> UInt8 {
    try next { try $0.integer(UInt8.self, at: $1) }
  }
  mutating func decode(_: UInt16.Type) throws -> UInt16 {
    try next { try $0.integer(UInt16.self, at: $1) }
  }
  mutating func decode(_: UInt32.Type) throws -> UInt32 {
    try next { try $0.integer(UInt32.self, at: $1) }
  }
  mutating func decode(_: UInt64.Type) throws -> UInt64 {
    try next { try $0.integer(UInt64.self, at: $1) }
  }
  mutating func decode(_: UInt128.Type) throws -> UInt128 {
    try next { try $0.integer(UInt128.self, at: $1) }
  }

  mutating func decode<T: Decodable>(_: T.Type) throws -> T {
    let key = IndexKey(currentIndex)
    return try next { try $0.decode(T.self, at: $1, key: key) }
  }

  mutating func nestedContainer<NestedKey: CodingKey>(
    keyedBy type: NestedKey.Type
  ) throws -> KeyedDecodingContainer<NestedKey> {
    let key = IndexKey(currentIndex)
    return try next { try $0.child($1, key: key).container(keyedBy: type) }
  }

  mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
    let key = IndexKey(currentIndex)
    return try next { try $0.child($1, key: key).unkeyedContainer() }
  }

  mutating func superDecoder() throws -> any Decoder { throw decoder.bail() }
}

private struct TapeSingleValueContainer: SingleValueDecodingContainer {
  let decoder: TapeDecoder

  var codingPath: [any CodingKey] { decoder.codingPath }
  private var node: Int { decoder.node }

  func decodeNil() -> Bool { decoder.isNull(at: node) }
  func decode(_: Bool.Type) throws -> Bool { try decoder.bool(at: node) }
  func decode(_: String.Type) throws -> String { try decoder.string(at: node) }
  func decode(_: Double.Type) throws -> Double { try decoder.double(at: node) }
  func decode(_: Float.Type) throws -> Float { throw decoder.bail() }
  func decode(_: Int.Type) throws -> Int { try decoder.integer(Int.self, at: node) }
  func decode(_: Int8.Type) throws -> Int8 { try decoder.integer(Int8.self, at: node) }
  func decode(_: Int16.Type) throws -> Int16 { try decoder.integer(Int16.self, at: node) }
  func decode(_: Int32.Type) throws -> Int32 { try decoder.integer(Int32.self, at: node) }
  func decode(_: Int64.Type) throws -> Int64 { try decoder.integer(Int64.self, at: node) }
  func decode(_: Int128.Type) throws -> Int128 { try decoder.integer(Int128.self, at: node) }
  func decode(_: UInt.Type) throws -> UInt { try decoder.integer(UInt.self, at: node) }
  func decode(_: UInt8.Type) throws -> UInt8 { try decoder.integer(UInt8.self, at: node) }
  func decode(_: UInt16.Type) throws -> UInt16 { try decoder.integer(UInt16.self, at: node) }
  func decode(_: UInt32.Type) throws -> UInt32 { try decoder.integer(UInt32.self, at: node) }
  func decode(_: UInt64.Type) throws -> UInt64 { try decoder.integer(UInt64.self, at: node) }
  func decode(_: UInt128.Type) throws -> UInt128 { try decoder.integer(UInt128.self, at: node) }

  func decode<T: Decodable>(_: T.Type) throws -> T { try decoder.decode(T.self, at: node) }
}
