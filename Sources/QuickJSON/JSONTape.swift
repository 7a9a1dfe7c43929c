import Foundation

/// One small JSON document, checked and laid out flat for ``QuickJSONDecoder``: its bytes, and
/// its values in document order (a "tape"), each knowing where the value after it starts, so a
/// decoder can step over a member without looking inside it.
///
/// The parser is stricter than Foundation's: it refuses (returns `nil`) anything it would have
/// to interpret the way Foundation does to get the same result, such as duplicate, escaped or
/// non-ASCII object keys, lone surrogates, deep nesting and large objects. Those documents go to
/// Foundation's `JSONDecoder` instead.
final class JSONTape {
  enum Kind: UInt8 {
    case object, array, string, escapedString, integer, number, `true`, `false`, null
  }

  struct Node {
    var kind: Kind
    /// Where the token starts in `bytes` (a string's first character, after the quote).
    var start: Int
    /// Where it ends (a string's closing quote, a container's closing bracket + 1).
    var end: Int
    /// Members of an object (key and value pairs) or elements of an array.
    var count = 0
    /// The index of the node after this value and everything inside it.
    var next = 0
  }

  /// Objects with more members go to Foundation: lookups here scan an object's keys.
  static let maxMembers = 32
  static let maxDepth = 32

  let bytes: [UInt8]
  let nodes: [Node]
  /// Set when a decode threw or asked for something only Foundation decodes (see
  /// ``QuickJSONDecoder``); any result is then not trusted, even if the error was caught.
  var bailed = false
  /// The first integer a decode found too large (or negative) for its type: Foundation reports
  /// it only as "not valid JSON", naming neither the field nor the type.
  var outOfRange: DecodingError?

  /// Parses `data`; `nil` for anything that is not plain, small, strict JSON.
  init?(_ data: Data) {
    var parser = Parser(bytes: Array(data))
    guard parser.parseDocument() else { return nil }
    (bytes, nodes) = (parser.bytes, parser.nodes)
  }

  // MARK: - Reading

  /// The text of a string node, with escapes resolved.
  func string(_ node: Node) -> String {
    let raw = bytes[node.start..<node.end]
    guard node.kind == .escapedString else { return String(decoding: raw, as: UTF8.self) }
    return Self.unescaped(raw)
  }

  /// The text of a string's bytes between its quotes, checked already (see
  /// ``escapeLength(in:at:)``), with escapes resolved.
  static func unescaped<Bytes: RandomAccessCollection<UInt8>>(_ raw: Bytes) -> String
  where Bytes.Index == Int {
    var unescaped: [UInt8] = []
    unescaped.reserveCapacity(raw.count)
    var index = raw.startIndex
    while index < raw.endIndex {
      let byte = raw[index]
      guard byte == backslash else {
        unescaped.append(byte)
        index += 1
        continue
      }
      let escape = raw[index + 1]
      index += 2
      switch escape {
      case UInt8(ascii: "b"): unescaped.append(0x08)
      case UInt8(ascii: "f"): unescaped.append(0x0C)
      case UInt8(ascii: "n"): unescaped.append(0x0A)
      case UInt8(ascii: "r"): unescaped.append(0x0D)
      case UInt8(ascii: "t"): unescaped.append(0x09)
      case UInt8(ascii: "u"):
        // Checked: a valid scalar, or a surrogate pair.
        var value = hex4(raw, at: index)
        index += 4
        if (0xD800..<0xDC00).contains(value) {
          value = 0x10000 + ((value - 0xD800) << 10) + (hex4(raw, at: index + 2) - 0xDC00)
          index += 6
        }
        unescaped.append(contentsOf: String(Unicode.Scalar(value)!).utf8)
      default: unescaped.append(escape)
      }
    }
    return String(decoding: unescaped, as: UTF8.self)
  }

  /// The length of a valid escape at `index` (a backslash) of `bytes`; a `\u` escape of a high
  /// surrogate only counts with the low one after it.
  static func escapeLength<Bytes: RandomAccessCollection<UInt8>>(in bytes: Bytes, at index: Int)
    -> Int?
  where Bytes.Index == Int {
    guard index + 1 < bytes.endIndex else { return nil }
    func isHex4(at index: Int) -> Bool {
      bytes[index..<index + 4].allSatisfy { hexValue($0) != nil }
    }
    switch bytes[index + 1] {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
      UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
      return 2
    case UInt8(ascii: "u"):
      guard index + 6 <= bytes.endIndex, isHex4(at: index + 2) else { return nil }
      let value = hex4(bytes, at: index + 2)
      if (0xDC00..<0xE000).contains(value) { return nil }
      guard (0xD800..<0xDC00).contains(value) else { return 6 }
      guard index + 12 <= bytes.endIndex, bytes[index + 6] == backslash,
        bytes[index + 7] == UInt8(ascii: "u"), isHex4(at: index + 8),
        (0xDC00..<0xE000).contains(hex4(bytes, at: index + 8))
      else { return nil }
      return 12
    default:
      return nil
    }
  }

  /// The index of the value of `object`'s member named `key`, as Swift compares strings (a
  /// scan: objects are small). Keys here are plain ASCII (see `parseObject`), so an ASCII `key`
  /// names only the same bytes and is compared as bytes, most keys by their length alone; a
  /// non-ASCII one can still be canonically equivalent to an ASCII key.
  func member(_ key: String, of object: Int) -> Int? {
    var key = key
    return key.withUTF8 { name in
      let isASCII = name.allSatisfy { $0 < 0x80 }
      return bytes.withUnsafeBufferPointer { bytes in
        func named(_ node: Node) -> Bool {
          guard isASCII else { return string(node) == String(decoding: name, as: UTF8.self) }
          guard node.end - node.start == name.count else { return false }
          guard let name = name.baseAddress else { return true }
          return memcmp(bytes.baseAddress! + node.start, name, node.end - node.start) == 0
        }
        var index = object + 1
        for _ in 0..<nodes[object].count {
          if named(nodes[index]) { return index + 1 }
          index = nodes[index + 1].next
        }
        return nil
      }
    }
  }

  /// The index of the value of `object`'s member named `key`: a generated decoder's lookup,
  /// by bytes when the name is ASCII (as a Swift identifier usually is).
  func member(_ key: StaticString, of object: Int) -> Int? {
    guard key.isASCII, key.hasPointerRepresentation else { return member("\(key)", of: object) }
    let name = key.utf8Start
    let length = key.utf8CodeUnitCount
    return bytes.withUnsafeBufferPointer { bytes in
      var index = object + 1
      for _ in 0..<nodes[object].count {
        let node = nodes[index]
        if node.end - node.start == length,
          memcmp(bytes.baseAddress! + node.start, name, length) == 0
        {
          return index + 1
        }
        index = nodes[index + 1].next
      }
      return nil
    }
  }

  /// A token's text as it stands (for numbers).
  func text(_ node: Node) -> String {
    String(decoding: bytes[node.start..<node.end], as: UTF8.self)
  }

  // MARK: - Values as Foundation reads them, or nil where it is left to Foundation

  func bool(at node: Int) -> Bool? {
    switch nodes[node].kind {
    case .true: true
    case .false: false
    default: nil
    }
  }

  func string(at node: Int) -> String? {
    let token = nodes[node]
    guard token.kind == .string || token.kind == .escapedString else { return nil }
    return string(token)
  }

  /// JSON's integers only (no fraction or exponent, which Foundation may or may not take);
  /// `nil` also for one that `T` cannot hold, which ``isInteger(at:)`` then tells apart.
  func integer<T: FixedWidthInteger>(_: T.Type, at node: Int) -> T? {
    let token = nodes[node]
    guard token.kind == .integer else { return nil }
    return Self.integer(T.self, digits: bytes[token.start..<token.end])
  }

  /// The integer that `digits` (JSON's, an optional minus and no fraction or exponent) write;
  /// `nil` for one that `T` cannot hold.
  static func integer<T: FixedWidthInteger>(
    _: T.Type, digits: some Collection<UInt8>
  ) -> T? {
    var rest = digits[...]
    let negative = rest.first == UInt8(ascii: "-")
    if negative {
      guard T.isSigned else { return nil }
      rest = rest.dropFirst()
    }
    var value: T = 0
    for byte in rest {
      let digit = T(byte - UInt8(ascii: "0"))
      let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
      let (sum, carried) =
        negative
        ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
      guard !overflowed, !carried else { return nil }
      value = sum
    }
    return value
  }

  func isInteger(at node: Int) -> Bool { nodes[node].kind == .integer }

  /// A finite `Double`; a number that overflows or underflows to zero is left to Foundation.
  func double(at node: Int) -> Double? {
    let token = nodes[node]
    guard token.kind == .integer || token.kind == .number else { return nil }
    return Self.finiteDouble(bytes[token.start..<token.end])
  }

  /// The number at `start` of `bytes`, by JSON's grammar (`-? (0 | [1-9][0-9]*) (. [0-9]+)?
  /// ([eE] [+-]? [0-9]+)?`): where it ends, and whether it is an integer (no fraction or
  /// exponent); `nil` for none, or for a zero with an exponent.
  static func number<Bytes: RandomAccessCollection<UInt8>>(in bytes: Bytes, at start: Int)
    -> (end: Int, isInteger: Bool)?
  where Bytes.Index == Int {
    var index = start
    func digits() -> Int {
      let first = index
      while index < bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
      {
        index += 1
      }
      return index - first
    }
    if index < bytes.endIndex, bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard index < bytes.endIndex else { return nil }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
    } else {
      guard digits() > 0 else { return nil }
    }
    var isInteger = true
    if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
      index += 1
      guard digits() > 0 else { return nil }
      isInteger = false
    }
    if index < bytes.endIndex, bytes[index] | 0x20 == UInt8(ascii: "e") {
      // Foundation refuses some zeros with an exponent ("0e3", "0.00e1", but not "0E+3" or
      // "0.0e1"): which ones is its call.
      guard
        bytes[start..<index].contains(where: {
          (UInt8(ascii: "1")...UInt8(ascii: "9")).contains($0)
        })
      else { return nil }
      index += 1
      if index < bytes.endIndex,
        bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
      {
        index += 1
      }
      guard digits() > 0 else { return nil }
      isInteger = false
    }
    return (index, isInteger)
  }

  /// The finite `Double` that a JSON number's text writes; `nil` for one that overflows or
  /// underflows to zero, which is left to Foundation.
  static func finiteDouble(_ text: some Collection<UInt8>) -> Double? {
    guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
      return nil
    }
    if value == 0 {
      let mantissa = text.prefix { $0 | 0x20 != UInt8(ascii: "e") }
      guard
        mantissa.allSatisfy({
          $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        })
      else { return nil }
    }
    return value
  }

  /// Checks a document and records its nodes.
  private struct Parser {
    let bytes: [UInt8]
    var nodes: [Node] = []

    init(bytes: [UInt8]) {
      self.bytes = bytes
      nodes.reserveCapacity(16)
    }

    mutating func parseDocument() -> Bool {
      var position = 0
      guard parseValue(&position, depth: 0) else { return false }
      skipWhitespace(&position)
      guard position == bytes.count else { return false }
      return !bytes.contains(where: { $0 >= 0x80 })
        || String(validating: bytes, as: UTF8.self) != nil
    }

    func skipWhitespace(_ position: inout Int) {
      while position < bytes.count {
        switch bytes[position] {
        case 0x20, 0x09, 0x0A, 0x0D: position += 1
        default: return
        }
      }
    }

    mutating func parseValue(_ position: inout Int, depth: Int) -> Bool {
      skipWhitespace(&position)
      guard position < bytes.count, depth < JSONTape.maxDepth else { return false }
      switch bytes[position] {
      case UInt8(ascii: "{"): return parseObject(&position, depth: depth)
      case UInt8(ascii: "["): return parseArray(&position, depth: depth)
      case quote: return parseString(&position)
      case UInt8(ascii: "t"): return parseLiteral("true", .true, &position)
      case UInt8(ascii: "f"): return parseLiteral("false", .false, &position)
      case UInt8(ascii: "n"): return parseLiteral("null", .null, &position)
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return parseNumber(&position)
      default: return false
      }
    }

    mutating func parseObject(_ position: inout Int, depth: Int) -> Bool {
      let index = nodes.count
      let close = UInt8(ascii: "}")
      return parseContainer(.object, closedBy: close, &position) { parser, position, count in
        parser.skipWhitespace(&position)
        // Keys are plain ASCII here. Foundation finds keys as Swift strings, by canonical
        // equivalence: an escaped or non-ASCII key can name the same key as another one
        // ("\u0041" and "A", or the Kelvin sign and "K").
        guard position < parser.bytes.count, parser.bytes[position] == quote,
          parser.parseString(&position), parser.nodes[parser.nodes.count - 1].kind == .string,
          count < JSONTape.maxMembers
        else { return false }
        let key = parser.nodes[parser.nodes.count - 1]
        let name = parser.bytes[key.start..<key.end]
        guard name.allSatisfy({ $0 < 0x80 }) else { return false }
        // Which of two equal keys wins is Foundation's business too. The earlier keys are
        // found by following each member's `next`, as a decoder's lookup does.
        var earlier = index + 1
        for _ in 0..<count {
          let node = parser.nodes[earlier]
          guard parser.bytes[node.start..<node.end] != name else { return false }
          earlier = parser.nodes[earlier + 1].next
        }
        return parser.consume(UInt8(ascii: ":"), &position)
          && parser.parseValue(&position, depth: depth + 1)
      }
    }

    mutating func parseArray(_ position: inout Int, depth: Int) -> Bool {
      parseContainer(.array, closedBy: UInt8(ascii: "]"), &position) { parser, position, _ in
        parser.parseValue(&position, depth: depth + 1)
      }
    }

    /// An object or an array: its node, then `member` for each comma-separated member (given
    /// how many came before) until `close`; the node records the count and where it ends.
    mutating func parseContainer(
      _ kind: Kind, closedBy close: UInt8, _ position: inout Int,
      member: (inout Parser, inout Int, _ count: Int) -> Bool
    ) -> Bool {
      let index = nodes.count
      nodes.append(Node(kind: kind, start: position, end: position))
      position += 1
      var count = 0
      if !consume(close, &position) {
        repeat {
          guard member(&self, &position, count) else { return false }
          count += 1
        } while consume(UInt8(ascii: ","), &position)
        guard consume(close, &position) else { return false }
      }
      nodes[index].count = count
      nodes[index].end = position
      nodes[index].next = nodes.count
      return true
    }

    /// Skips whitespace, then takes `byte` if it comes next.
    func consume(_ byte: UInt8, _ position: inout Int) -> Bool {
      skipWhitespace(&position)
      guard position < bytes.count, bytes[position] == byte else { return false }
      position += 1
      return true
    }

    mutating func parseString(_ position: inout Int) -> Bool {
      let start = position + 1
      var index = start
      var escaped = false
      while index < bytes.count {
        switch bytes[index] {
        case quote:
          append(Node(kind: escaped ? .escapedString : .string, start: start, end: index))
          position = index + 1
          return true
        case backslash:
          guard let length = JSONTape.escapeLength(in: bytes, at: index) else { return false }
          escaped = true
          index += length
        case 0x00..<0x20:
          return false
        default:
          index += 1
        }
      }
      return false
    }

    mutating func parseLiteral(_ literal: StaticString, _ kind: Kind, _ position: inout Int) -> Bool
    {
      let length = literal.utf8CodeUnitCount
      guard position + length <= bytes.count,
        literal.withUTF8Buffer({ $0.elementsEqual(bytes[position..<position + length]) })
      else { return false }
      append(Node(kind: kind, start: position, end: position + length))
      position += length
      return true
    }

    mutating func parseNumber(_ position: inout Int) -> Bool {
      guard let (end, isInteger) = JSONTape.number(in: bytes, at: position) else { return false }
      append(Node(kind: isInteger ? .integer : .number, start: position, end: end))
      position = end
      return true
    }

    mutating func append(_ node: Node) {
      var node = node
      node.next = nodes.count + 1
      nodes.append(node)
    }
  }
}

private let quote = UInt8(ascii: "\"")
private let backslash = UInt8(ascii: "\\")

/// The value of the four hex digits at `index` (checked by the parser).
private func hex4<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at index: Int) -> UInt32
where Bytes.Index == Int {
  bytes[index..<index + 4].reduce(0) { $0 << 4 | UInt32(hexValue($1) ?? 0) }
}

private func hexValue(_ byte: UInt8) -> UInt8? {
  switch byte {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
  default: nil
  }
}
