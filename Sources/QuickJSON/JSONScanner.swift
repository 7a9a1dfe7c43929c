/// A document read front to back by the code that `@JSONCodable` generates, with no tape: the
/// members of each object are expected in the order of their keys' bytes, as `.sortedKeys`
/// writes them, and each value is read where it stands.
///
/// It takes only what it can read without a doubt, a subset of what ``JSONTape`` takes: plain
/// ASCII keys in strictly rising order (so none twice), integers without a fraction or an
/// exponent where an integer is asked for, and no container in a member the type does not read.
/// On anything else it throws, and the document goes to the tape.
final class JSONScanner {
  private let bytes: UnsafeBufferPointer<UInt8>
  private var position = 0
  /// The object being read: the key read last, and whether a member was read (so a comma comes
  /// before the next). Saved and restored around a nested object's reading.
  var object = ObjectState()

  struct ObjectState {
    var lastKey: Range<Int>?
    var afterMember = false
  }

  /// Reads `bytes`, which must stay valid while the scanner is used.
  init(_ bytes: UnsafeBufferPointer<UInt8>) {
    self.bytes = bytes
  }

  // MARK: - Tokens

  private func skipWhitespace() {
    while position < bytes.count {
      switch bytes[position] {
      case 0x20, 0x09, 0x0A, 0x0D: position += 1
      default: return
      }
    }
  }

  /// The next byte after whitespace, not taken.
  private func peek() throws -> UInt8 {
    skipWhitespace()
    guard position < bytes.count else { throw LeftToFoundation() }
    return bytes[position]
  }

  /// Takes `byte` after whitespace, or throws.
  private func expect(_ byte: UInt8) throws {
    guard try peek() == byte else { throw LeftToFoundation() }
    position += 1
  }

  /// Takes `literal` if it comes next. `false` when the next byte is not its first or too few
  /// bytes are left; an error when the bytes start like it and then differ (no JSON value does).
  private func take(_ literal: StaticString) throws -> Bool {
    let length = literal.utf8CodeUnitCount
    guard try peek() == literal.utf8Start.pointee, position + length <= bytes.count else {
      return false
    }
    let expected = UnsafeBufferPointer(start: literal.utf8Start, count: length)
    guard bytes[position..<position + length].elementsEqual(expected) else {
      throw LeftToFoundation()
    }
    position += length
    return true
  }

  /// A string's bytes between its quotes, checked: escapes as the tape takes them, no control
  /// characters, UTF-8. A key (`isKey`) must be plain ASCII, as the tape wants it.
  private func stringBytes(isKey: Bool = false) throws -> (range: Range<Int>, escaped: Bool) {
    try expect(UInt8(ascii: "\""))
    let start = position
    var isASCII = true
    var escaped = false
    while position < bytes.count {
      switch bytes[position] {
      case UInt8(ascii: "\""):
        let range = start..<position
        position += 1
        if !isASCII {
          guard !isKey, String(validating: bytes[range], as: UTF8.self) != nil else {
            throw LeftToFoundation()
          }
        }
        return (range, escaped)
      case UInt8(ascii: "\\"):
        guard !isKey, let length = JSONTape.escapeLength(in: bytes, at: position) else {
          throw LeftToFoundation()
        }
        escaped = true
        position += length
      case 0x00..<0x20:
        throw LeftToFoundation()
      case 0x80...:
        isASCII = false
        position += 1
      default:
        position += 1
      }
    }
    throw LeftToFoundation()
  }

  /// A number, as the tape takes one: its range, and whether it is an integer.
  private func number() throws -> (range: Range<Int>, isInteger: Bool) {
    skipWhitespace()
    guard let (end, isInteger) = JSONTape.number(in: bytes, at: position) else {
      throw LeftToFoundation()
    }
    defer { position = end }
    return (position..<end, isInteger)
  }

  /// A string, a number or a literal, checked and stepped over: a member the type does not read.
  private func skipScalar() throws {
    switch try peek() {
    case UInt8(ascii: "\""): _ = try stringBytes()
    case UInt8(ascii: "t"): guard try take("true") else { throw LeftToFoundation() }
    case UInt8(ascii: "f"): guard try take("false") else { throw LeftToFoundation() }
    case UInt8(ascii: "n"): guard try take("null") else { throw LeftToFoundation() }
    default: _ = try number()
    }
  }

  // MARK: - Values

  func null() throws -> Bool { try take("null") }

  func bool() throws -> Bool {
    if try take("true") { return true }
    if try take("false") { return false }
    throw LeftToFoundation()
  }

  func string() throws -> String {
    let (range, escaped) = try stringBytes()
    return escaped
      ? JSONTape.unescaped(bytes[range]) : String(decoding: bytes[range], as: UTF8.self)
  }

  /// An integer within `T`'s range, read as the tape reads one.
  func integer<T: FixedWidthInteger>() throws -> T {
    let (range, isInteger) = try number()
    guard isInteger, let value = JSONTape.integer(T.self, digits: bytes[range]) else {
      throw LeftToFoundation()
    }
    return value
  }

  func double() throws -> Double {
    guard let value = JSONTape.finiteDouble(bytes[try number().range]) else {
      throw LeftToFoundation()
    }
    return value
  }

  /// Each element of an array, read by `element`.
  func elements<Element>(_ element: () throws -> Element) throws -> [Element] {
    try expect(UInt8(ascii: "["))
    var elements: [Element] = []
    if try peek() == UInt8(ascii: "]") {
      position += 1
      return elements
    }
    repeat {
      elements.append(try element())
    } while try peek() == UInt8(ascii: ",") && advance()
    try expect(UInt8(ascii: "]"))
    return elements
  }

  /// Each member of an object with keys of any order, its value read by `member`.
  func members<Member>(_ member: () throws -> Member) throws -> [String: Member] {
    try expect(UInt8(ascii: "{"))
    var members: [String: Member] = [:]
    if try peek() == UInt8(ascii: "}") {
      position += 1
      return members
    }
    repeat {
      let key = String(decoding: bytes[try stringBytes(isKey: true).range], as: UTF8.self)
      try expect(UInt8(ascii: ":"))
      guard members.updateValue(try member(), forKey: key) == nil else { throw LeftToFoundation() }
    } while try peek() == UInt8(ascii: ",") && advance()
    try expect(UInt8(ascii: "}"))
    return members
  }

  private func advance() -> Bool {
    position += 1
    return true
  }

  // MARK: - Objects read in key order

  /// Starts reading an object's members with ``member(_:)``.
  func beginObject() throws {
    try expect(UInt8(ascii: "{"))
    object = ObjectState()
  }

  /// Moves to the value of the member named `key`; `false`, having taken nothing, when the
  /// object has none. The members before it, which the type does not read, are stepped over.
  func member(_ key: StaticString) throws -> Bool {
    try member(UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
  }

  /// Steps over the members left and the closing brace.
  func endObject() throws {
    guard try !member(nil) else { throw LeftToFoundation() }
    try expect(UInt8(ascii: "}"))
  }

  /// ``member(_:)`` for `key`'s bytes; `nil` steps over every member left.
  private func member(_ key: UnsafeBufferPointer<UInt8>?) throws -> Bool {
    while true {
      let mark = position
      if try peek() == UInt8(ascii: "}") {
        position = mark
        return false
      }
      if object.afterMember { try expect(UInt8(ascii: ",")) }
      let name = try stringBytes(isKey: true).range
      let nameBytes = UnsafeBufferPointer(rebasing: bytes[name])
      if let last = object.lastKey {
        guard Self.order(UnsafeBufferPointer(rebasing: bytes[last]), nameBytes) < 0 else {
          throw LeftToFoundation()
        }
      }
      if let key {
        let order = Self.order(key, nameBytes)
        if order == 0 {
          try expect(UInt8(ascii: ":"))
          object = ObjectState(lastKey: name, afterMember: true)
          return true
        }
        if order < 0 {
          position = mark
          return false
        }
      }
      try expect(UInt8(ascii: ":"))
      try skipScalar()
      object = ObjectState(lastKey: name, afterMember: true)
    }
  }

  /// How `left` compares with `right` by their bytes: below, at or above zero. A loop of its
  /// own: the generic `elementsEqual` and `lexicographicallyPrecedes` cost several times more
  /// on keys this short.
  private static func order(
    _ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>
  ) -> Int {
    for index in 0..<min(left.count, right.count) where left[index] != right[index] {
      return Int(left[index]) - Int(right[index])
    }
    return left.count - right.count
  }

  /// Takes the whitespace after the document, which must end there.
  func end() throws {
    skipWhitespace()
    guard position == bytes.count else { throw LeftToFoundation() }
  }
}
