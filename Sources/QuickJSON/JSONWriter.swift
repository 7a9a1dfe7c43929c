package import Foundation

/// Writes JSON straight into bytes, for the few messages on a write's path whose shape is fixed
/// (a cluster record's header, etcd's requests): Codable's containers cost more than the
/// message.
///
/// It writes what ``QuickJSONEncoder`` writes for the same members in the same order: strings
/// escaped as Foundation escapes them, and members in the order given (give them sorted by key to
/// match `.sortedKeys`).
///
/// ```swift
/// var json = JSONWriter()
/// json.beginObject()
/// json.key("count")
/// json.number(UInt64(3))
/// json.endObject()
/// let data = json.data  // {"count":3}
/// ```
package struct JSONWriter {
  /// What was written so far.
  package private(set) var bytes: [UInt8] = []
  /// Whether the next value or key follows another one at its level.
  private var followsValue = false

  /// An empty writer with room for `capacity` bytes.
  package init(capacity: Int = 256) {
    bytes.reserveCapacity(capacity)
  }

  /// The bytes written, as `Data`.
  package var data: Data { Data(bytes) }

  /// Opens an object; its members follow as ``key(_:)`` and a value each.
  package mutating func beginObject() { open(UInt8(ascii: "{")) }

  /// Closes the innermost object.
  package mutating func endObject() { close(UInt8(ascii: "}")) }

  /// Opens an array.
  package mutating func beginArray() { open(UInt8(ascii: "[")) }

  /// Closes the innermost array.
  package mutating func endArray() { close(UInt8(ascii: "]")) }

  /// A member's key; its value comes next.
  package mutating func key(_ name: String) {
    separate()
    Self.write(string: name, into: &bytes)
    bytes.append(UInt8(ascii: ":"))
    followsValue = false
  }

  /// A string value.
  package mutating func string(_ text: String) {
    separate()
    Self.write(string: text, into: &bytes)
    followsValue = true
  }

  /// An unsigned number.
  package mutating func number(_ value: UInt64) {
    separate()
    Self.write(decimal: value, into: &bytes)
    followsValue = true
  }

  /// A signed number.
  package mutating func number(_ value: Int64) {
    separate()
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    Self.write(decimal: value.magnitude, into: &bytes)
    followsValue = true
  }

  /// An object of numbers, its members sorted by key.
  package mutating func object<Number: BinaryInteger>(sorting members: [String: Number]) {
    beginObject()
    for (name, value) in members.sorted(by: { $0.key < $1.key }) {
      key(name)
      if let unsigned = UInt64(exactly: value) {
        number(unsigned)
      } else {
        number(Int64(value))
      }
    }
    endObject()
  }

  private mutating func open(_ bracket: UInt8) {
    separate()
    bytes.append(bracket)
    followsValue = false
  }

  private mutating func close(_ bracket: UInt8) {
    bytes.append(bracket)
    followsValue = true
  }

  private mutating func separate() {
    if followsValue { bytes.append(UInt8(ascii: ",")) }
  }

  // MARK: - Shared with the encoder

  static func write(decimal value: UInt64, into bytes: inout [UInt8]) {
    guard value >= 10 else { return bytes.append(UInt8(ascii: "0") + UInt8(value)) }
    let start = bytes.count
    var rest = value
    while rest > 0 {
      bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
      rest /= 10
    }
    bytes[start...].reverse()
  }

  /// A finite number as Foundation writes it: its shortest round-trip description, with no
  /// `.0` on a whole number. Returns `false`, having written nothing, for a NaN or an infinity,
  /// which Foundation refuses with an error of its own.
  static func write(double value: Double, into bytes: inout [UInt8]) -> Bool {
    guard value.isFinite else { return false }
    var text = value.description
    if text.hasSuffix(".0") { text.removeLast(2) }
    bytes.append(contentsOf: text.utf8)
    return true
  }

  /// Escapes as Foundation does: quote, backslash and slash, the usual short escapes, other
  /// control characters as `\u00xx`; everything else, non-ASCII included, as it is. Returns
  /// whether `string` was ASCII.
  @discardableResult
  static func write(string: String, into bytes: inout [UInt8]) -> Bool {
    var string = string
    return string.withUTF8 { write(utf8: $0, into: &bytes) }
  }

  /// ``write(string:into:)`` for text that is UTF-8 already.
  @discardableResult
  static func write(utf8: UnsafeBufferPointer<UInt8>, into bytes: inout [UInt8]) -> Bool {
    bytes.append(UInt8(ascii: "\""))
    defer { bytes.append(UInt8(ascii: "\"")) }
    var plain = true
    var ascii = true
    for byte in utf8 {
      if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
        || byte == UInt8(ascii: "/")
      {
        plain = false
      }
      if byte >= 0x80 { ascii = false }
    }
    guard !plain else {
      bytes.append(contentsOf: utf8)
      return ascii
    }
    for byte in utf8 { escape(byte, into: &bytes) }
    return ascii
  }

  private static func escape(_ byte: UInt8, into bytes: inout [UInt8]) {
    let escape: UInt8
    switch byte {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escape = byte
    case 0x08: escape = UInt8(ascii: "b")
    case 0x09: escape = UInt8(ascii: "t")
    case 0x0A: escape = UInt8(ascii: "n")
    case 0x0C: escape = UInt8(ascii: "f")
    case 0x0D: escape = UInt8(ascii: "r")
    case ..<0x20: escape = UInt8(ascii: "u")
    default: return bytes.append(byte)
    }
    bytes.append(UInt8(ascii: "\\"))
    bytes.append(escape)
    if escape == UInt8(ascii: "u") {
      let zero = UInt8(ascii: "0")
      bytes.append(contentsOf: [zero, zero, hex(byte >> 4), hex(byte & 0xF)])
    }
  }

  private static func hex(_ digit: UInt8) -> UInt8 {
    digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
  }
}
