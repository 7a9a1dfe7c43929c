import Foundation
import QuickJSON
import SharedBroker
import TestSupport
import Testing

/// The code that `@JSONCodable` generates reads and writes what the type's synthesized Codable
/// does through Foundation, or leaves the value to it: random values and random documents.
@Suite struct JSONCodableTests {
  @JSONCodable
  struct Inner: Codable, Equatable {
    var id: Int
    var label: String?
  }

  /// Members that the generated code reads and writes itself.
  @JSONCodable
  struct Plain: Codable, Equatable {
    var count = 0
    var small: Int8
    var wide: UInt64
    var negative: Int64
    var name: String
    var flag: Bool
    var tags: [String]
    var maybe: Int?
    var inner: Inner
    var inners: [Inner]?
    var holes: [UInt16?]
    var scores: [String: Int]
    var notes: [String: String?]
    var Upper = 0
    var `default` = ""
    var ratio: Double
    var ratios: [Double]?
  }

  /// Members that go through Codable: read through it, and the value written by it.
  @JSONCodable
  struct Mixed: Codable, Equatable {
    enum Mood: String, Codable { case calm, busy }
    var ratio: Double
    var mood: Mood
    var moods: [Mood]?
    var flags: [String: Bool]
    var when: Date?
    var inner: Inner
  }

  let quickEncoder = QuickJSONEncoder()
  let quickDecoder = QuickJSONDecoder()
  let foundationEncoder: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return encoder
  }()
  let foundationDecoder = JSONDecoder()

  static let alphabet = Array("aZ09 \"\\/\n\t\u{0}\u{1F}\u{7F}é€😀")

  static func text(_ random: inout SplitMix64) -> String {
    String((0..<random.next(below: 10)).map { _ in alphabet[random.next(below: alphabet.count)] })
  }

  /// Any finite number, and the shapes whose text Foundation writes with care: whole numbers,
  /// negative zero, short fractions, powers of ten near the switch to an exponent.
  static func number(_ random: inout SplitMix64) -> Double {
    switch random.next(below: 5) {
    case 0: return Double(Int64(bitPattern: random.next()) >> random.next(below: 64))
    case 1: return [0.0, -0.0, 0.1, 1.5, -2.25][random.next(below: 5)]
    case 2:
      let exponent = Double(Int(random.next(below: 50)) - 25)
      return Double(random.next(below: 1_000)) * pow(10, exponent)
    default:
      let number = Double(bitPattern: random.next())
      return number.isFinite ? number : Double(random.next(below: 9)) / 8
    }
  }

  static func inner(_ random: inout SplitMix64) -> Inner {
    Inner(
      id: Int(truncatingIfNeeded: random.next()),
      label: random.next(below: 2) == 0 ? nil : text(&random))
  }

  static func plain(_ random: inout SplitMix64) -> Plain {
    Plain(
      count: random.next(below: 1_000),
      small: Int8(truncatingIfNeeded: random.next()),
      wide: random.next(),
      negative: Int64(bitPattern: random.next()) | .min,
      name: text(&random),
      flag: random.next(below: 2) == 0,
      tags: (0..<random.next(below: 4)).map { _ in text(&random) },
      maybe: random.next(below: 2) == 0 ? nil : random.next(below: 9),
      inner: inner(&random),
      inners: random.next(below: 3) == 0 ? nil : (0..<random.next(below: 3)).map { _ in inner(&random) },
      holes: (0..<random.next(below: 4)).map { _ in
        random.next(below: 2) == 0 ? nil : UInt16(truncatingIfNeeded: random.next())
      },
      scores: Dictionary(
        uniqueKeysWithValues: (0..<random.next(below: 4)).map { ("k\($0)\(text(&random).count)", $0) }),
      notes: ["B": random.next(below: 2) == 0 ? nil : text(&random), "a": "", "a10": "x"],
      Upper: random.next(below: 5),
      default: text(&random),
      ratio: number(&random),
      ratios: random.next(below: 3) == 0 ? nil : (0..<random.next(below: 4)).map { _ in number(&random) }
    )
  }

  static func mixed(_ random: inout SplitMix64) -> Mixed {
    let ratio = Double(bitPattern: random.next())
    return Mixed(
      ratio: ratio.isFinite ? ratio : 0.25,
      mood: random.next(below: 2) == 0 ? .calm : .busy,
      moods: random.next(below: 2) == 0 ? nil : [.busy, .calm],
      flags: [random.next(below: 2) == 0 ? "é" : "f\(random.next(below: 3))": random.next(below: 2) == 0],
      when: random.next(below: 2) == 0 ? nil : Date(timeIntervalSince1970: 1_000),
      inner: inner(&random)
    )
  }

  @Test func plainValuesAreWrittenAsFoundationWritesThem() throws {
    var random = SplitMix64(seed: 0xC0DEC)
    for _ in 0..<2_000 {
      let value = Self.plain(&random)
      let expected = try foundationEncoder.encode(value)
      let generated = try #require(quickEncoder.quickly(value), "left \(value) to Codable")
      #expect(
        generated == expected,
        "\(String(decoding: generated, as: UTF8.self)) \(String(decoding: expected, as: UTF8.self))")
      #expect(try quickEncoder.encode(value) == expected)
      #expect(quickDecoder.quickly(Plain.self, from: expected) == value)
      #expect(quickDecoder.scanning(Plain.self, from: expected) == value)
    }
  }

  /// Foundation's order for a non-ASCII key is its own business.
  @Test func aDictionaryWithANonASCIIKeyIsWrittenByCodable() throws {
    var random = SplitMix64(seed: 0xC0DEE)
    var value = Self.plain(&random)
    value.scores = ["é": 1, "f": 2, "E": 3]
    #expect(quickEncoder.quickly(value) == nil)
    #expect(try quickEncoder.encode(value) == foundationEncoder.encode(value))
    #expect(try quickDecoder.decode(Plain.self, from: foundationEncoder.encode(value)) == value)
  }

  /// Foundation refuses them, with an error that names the member.
  @Test func aNaNOrAnInfinityIsLeftToCodable() throws {
    var random = SplitMix64(seed: 0xC0DEF)
    for number in [Double.nan, .infinity, -.infinity] {
      var value = Self.plain(&random)
      value.ratio = number
      #expect(quickEncoder.quickly(value) == nil)
      #expect {
        try quickEncoder.encode(value)
      } throws: { error in
        guard case let EncodingError.invalidValue(_, context) = error else { return false }
        return context.codingPath.map(\.stringValue) == ["ratio"]
      }
    }
  }

  @Test func valuesWithCodableMembersAreWrittenByCodable() throws {
    var random = SplitMix64(seed: 0xC0DED)
    for _ in 0..<200 {
      let value = Self.mixed(&random)
      #expect(quickEncoder.quickly(value) == nil)
      #expect(try quickEncoder.encode(value) == foundationEncoder.encode(value))
    }
  }

  /// Random values, their JSON then damaged, reordered or with members dropped, nulled or
  /// added: the generated code and Codable through Foundation agree on every document.
  @Test func randomDocumentsDecodeAsCodableDecodesThem() throws {
    var random = SplitMix64(seed: 0xD0C5)
    var generatedHits = (plain: 0, mixed: 0)
    var scannedHits = 0
    for round in 0..<3_000 {
      let plain = try foundationEncoder.encode(Self.plain(&random))
      let mixed = try foundationEncoder.encode(Self.mixed(&random))
      let plainDocument = try Self.damage(plain, round: round, &random)
      let mixedDocument = try Self.damage(mixed, round: round, &random)
      if expectSameOutcome(Plain.self, plainDocument) { generatedHits.plain += 1 }
      if expectSameOutcome(Mixed.self, mixedDocument) { generatedHits.mixed += 1 }
      if expectSameScan(Plain.self, plainDocument) { scannedHits += 1 }
      // A Codable member leaves every document to the tape.
      #expect(quickDecoder.scanning(Mixed.self, from: mixedDocument) == nil)
    }
    // The undamaged third and the damaged documents still plain and complete; of the mixed
    // ones, a `Date` is Foundation's in half and a non-ASCII key makes half of the rest.
    #expect(generatedHits.plain >= 1_000)
    #expect(generatedHits.mixed >= 300)
    // The undamaged third, and those with a byte damaged where the result is the same.
    #expect(scannedHits >= 1_000)
  }

  /// Whether the generated code took `data` reading it in order, without a tape; expects that
  /// it agreed with Foundation if it did.
  func expectSameScan<T: JSONCodable & Equatable>(
    _: T.Type, _ data: Data, sourceLocation: SourceLocation = #_sourceLocation
  ) -> Bool {
    guard let scanned = quickDecoder.scanning(T.self, from: data) else { return false }
    let expected = try? foundationDecoder.decode(T.self, from: data)
    #expect(scanned == expected, "\(String(decoding: data, as: UTF8.self))", sourceLocation: sourceLocation)
    return true
  }

  /// One of: as it is, a byte replaced, or its top-level members changed and written in
  /// another order with whitespace.
  static func damage(_ data: Data, round: Int, _ random: inout SplitMix64) throws -> Data {
    switch round % 3 {
    case 0:
      return data
    case 1:
      var damaged = data
      let replacements = Array(#"{}[],:"\ 0-e.ntfu1"#.utf8) + [0x80, 0xFF]
      damaged[random.next(below: damaged.count)] = replacements[random.next(below: replacements.count)]
      return damaged
    default:
      var object = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
      let keys = object.keys.sorted()
      let key = keys[random.next(below: keys.count)]
      switch random.next(below: 4) {
      case 0: object[key] = nil
      case 1: object[key] = NSNull()
      case 2: object["extra"] = [1, "two"] as [Any]
      default: object[key] = "\(random.next(below: 100))"
      }
      return try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted])
    }
  }

  /// Whether the generated code took `data`; expects that it agreed with Foundation if it did,
  /// and that the full decode always does.
  @discardableResult
  func expectSameOutcome<T: JSONCodable & Equatable>(
    _: T.Type, _ data: Data, sourceLocation: SourceLocation = #_sourceLocation
  ) -> Bool {
    let expected = try? foundationDecoder.decode(T.self, from: data)
    let generated = quickDecoder.quickly(T.self, from: data)
    let decoded = try? quickDecoder.decode(T.self, from: data)
    let text = String(decoding: data, as: UTF8.self)
    #expect(decoded == expected, "\(text)", sourceLocation: sourceLocation)
    guard let generated else { return false }
    #expect(generated == expected, "\(text)", sourceLocation: sourceLocation)
    return true
  }

  /// Read in order: what `.sortedKeys` writes, spaced or with members the type does not read;
  /// anything else goes to the tape, with the same result as Foundation either way.
  @Test func documentsInKeyOrderAreReadWithoutATape() throws {
    let scanned = [
      #"{"id":1,"label":"a\/b \u00e9\ud83d\ude00"}"#,
      #" { "a" : null , "id" : -0 , "m" : 2.5e3 , "n" : "x" , "z" : true } "#,
      #"{"id":9223372036854775807}"#,
    ]
    let toTheTape = [
      #"{"label":"a","id":1}"#,
      #"{"id":1,"id":2}"#,
      #"{"extra":[1],"id":1}"#,
      #"{"i\u0064":1}"#,
      #"{"id":1,}"#,
      #"{"id":1.0}"#,
      #"{"id":1e2}"#,
      #"{"id":9223372036854775808}"#,
      #"{"id":1} x"#,
      #"{"id":01}"#,
    ]
    for text in scanned {
      let data = Data(text.utf8)
      #expect(quickDecoder.scanning(Inner.self, from: data) != nil, "\(text)")
      #expect(expectSameScan(Inner.self, data))
      expectSameOutcome(Inner.self, data)
    }
    for text in toTheTape {
      let data = Data(text.utf8)
      #expect(quickDecoder.scanning(Inner.self, from: data) == nil, "\(text)")
      expectSameOutcome(Inner.self, data)
    }
  }

  @Test func anIntegerOutOfRangeStillNamesItsField() {
    #expect(throws: DecodingError.self) {
      try quickDecoder.decode(Inner.self, from: Data(#"{"id":99999999999999999999}"#.utf8))
    }
    do {
      _ = try quickDecoder.decode(Inner.self, from: Data(#"{"id":99999999999999999999}"#.utf8))
    } catch let DecodingError.dataCorrupted(context) {
      #expect(context.codingPath.map(\.stringValue) == ["id"])
    } catch {
      Issue.record("unexpected \(error)")
    }
  }
}
