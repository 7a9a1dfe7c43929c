/// A type whose JSON the code that `@JSONCodable` generates reads and writes itself: `Bool`,
/// `String`, the integers, `Double`, optionals, arrays and `String`-keyed
/// dictionaries of them, and ``JSONCodable`` types. A member of any other `Codable` type is
/// read through its Codable conformance, and a value holding one is written through it.
public protocol JSONMember: Codable {
  /// Reads a value, or throws where the document is left to Codable.
  init(jsonValue value: JSONValueReader) throws

  /// Writes the value, or throws where it is left to Codable.
  func encode(jsonValue value: inout JSONValueWriter) throws

  /// The value of a member that the document does not have, as Codable's synthesized
  /// conformance takes it: `nil` for an optional; a throw for the rest, which are required.
  /// Not a `Self?`: the callers are generic, and the runtime would look up that type's metadata
  /// on every member read.
  static func jsonValueIfMissing() throws -> Self

  /// Whether a member holding this value is left out, as Codable's synthesized conformance
  /// leaves out a `nil` optional.
  var isJSONValueOmitted: Bool { get }
}

extension JSONMember {
  /// Required: a throw.
  public static func jsonValueIfMissing() throws -> Self { throw LeftToFoundation() }

  /// Always written.
  public var isJSONValueOmitted: Bool { false }
}

extension Bool: JSONMember {
  /// `true` or `false`.
  public init(jsonValue value: JSONValueReader) throws {
    self = try value.bool()
  }

  /// `true` or `false`.
  public func encode(jsonValue value: inout JSONValueWriter) {
    let literal: StaticString = self ? "true" : "false"
    literal.withUTF8Buffer { value.bytes.append(contentsOf: $0) }
  }
}

extension String: JSONMember {
  /// A string, its escapes resolved.
  public init(jsonValue value: JSONValueReader) throws {
    self = try value.string()
  }

  /// A string, escaped as Foundation escapes it.
  public func encode(jsonValue value: inout JSONValueWriter) {
    JSONWriter.write(string: self, into: &value.bytes)
  }
}

extension Double: JSONMember {
  /// A number.
  public init(jsonValue value: JSONValueReader) throws {
    self = try value.double()
  }

  /// The shortest digits that read back as the same number, as Foundation writes them; a NaN or
  /// an infinity is left to Codable, which refuses it.
  public func encode(jsonValue value: inout JSONValueWriter) throws {
    guard JSONWriter.write(double: self, into: &value.bytes) else { throw LeftToFoundation() }
  }
}

extension JSONMember where Self: FixedWidthInteger {
  /// An integer without a fraction or an exponent, within the type's range.
  public init(jsonValue value: JSONValueReader) throws { self = try value.integer() }

  /// Decimal digits.
  public func encode(jsonValue value: inout JSONValueWriter) { value.write(integer: self) }
}

extension Int: JSONMember {}
extension Int8: JSONMember {}
extension Int16: JSONMember {}
extension Int32: JSONMember {}
extension Int64: JSONMember {}
extension UInt: JSONMember {}
extension UInt8: JSONMember {}
extension UInt16: JSONMember {}
extension UInt32: JSONMember {}
extension UInt64: JSONMember {}

extension Optional: JSONMember where Wrapped: JSONMember {
  /// `null` as `nil`, anything else as the wrapped type.
  public init(jsonValue value: JSONValueReader) throws {
    self = try value.null() ? nil : try Wrapped(jsonValue: value)
  }

  /// `null` for `nil` (an array's element; a member holding `nil` is left out).
  public func encode(jsonValue value: inout JSONValueWriter) throws {
    guard let self else {
      return ("null" as StaticString).withUTF8Buffer { value.bytes.append(contentsOf: $0) }
    }
    try self.encode(jsonValue: &value)
  }

  /// `nil`: an optional member may be missing.
  public static func jsonValueIfMissing() -> Self { nil }

  /// Left out when `nil`.
  public var isJSONValueOmitted: Bool { self == nil }
}

extension Array: JSONMember where Element: JSONMember {
  /// An array, each element as its type reads it.
  public init(jsonValue value: JSONValueReader) throws {
    self = try value.elements { try Element(jsonValue: $0) }
  }

  /// The elements between brackets.
  public func encode(jsonValue value: inout JSONValueWriter) throws {
    value.bytes.append(UInt8(ascii: "["))
    for (index, element) in enumerated() {
      if index > 0 { value.bytes.append(UInt8(ascii: ",")) }
      try element.encode(jsonValue: &value)
    }
    value.bytes.append(UInt8(ascii: "]"))
  }
}

extension Dictionary: JSONMember where Key == String, Value: JSONMember {
  /// An object, each member's value as its type reads it.
  public init(jsonValue value: JSONValueReader) throws {
    self = try value.members { try Value(jsonValue: $0) }
  }

  /// An object, its members in the order of their keys' bytes; a `nil` value is written as
  /// `null`, not left out.
  public func encode(jsonValue value: inout JSONValueWriter) throws {
    try JSONObjectWriter.write(into: &value) { object in
      for (key, element) in sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
        try object.encode(element, forDictionaryKey: key)
      }
    }
  }
}
