import Foundation
import QuickJSON
import SharedBroker
import SharedBrokerServer
import TestSupport
import Testing

/// The fast JSON encoder writes Foundation's bytes (`.sortedKeys`) or leaves the value to
/// Foundation: a reader cannot tell which one encoded a write.
@Suite struct QuickJSONEncoderTests {
  struct Profile: Codable, Equatable {
    enum Role: String, Codable { case owner, guest }
    enum Status: Codable, Equatable {
      case online
      case away(since: Int, note: String?)
    }
    var name: String
    var age: UInt8
    var tags: [String]
    var flags: [String: Bool]
    var history: [[Int64]]
    var role: Role
    var status: Status
    var friend: BenchmarkValue?
    var nothing: Int?
    var small: Int8
    var wide: UInt64
  }

  /// Keys encoded in an order of their own, one of them twice.
  struct Custom: Encodable {
    enum Keys: String, CodingKey {
      case zeta, alpha, a10, a2, _under
      case beta = "Beta"
    }
    var twice = false
    func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: Keys.self)
      try container.encode(1, forKey: .zeta)
      try container.encode(true, forKey: .alpha)
      var nested = container.nestedUnkeyedContainer(forKey: .beta)
      try nested.encode("x")
      try nested.encodeNil()
      var inner = nested.nestedContainer(keyedBy: Keys.self)
      try inner.encode(UInt16(7), forKey: .a2)
      try container.encode(Int32(-3), forKey: .a10)
      var again = encoder.container(keyedBy: Keys.self)
      try again.encode("last", forKey: twice ? .zeta : ._under)
    }
  }

  let quick = QuickJSONEncoder()
  let foundation: JSONEncoder = {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return encoder
  }()

  /// The fast path took `value` and wrote what Foundation writes.
  func expectQuick<T: Encodable>(
    _ value: T, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let expected = String(decoding: try foundation.encode(value), as: UTF8.self)
    let fast = quick.quickly(value).map { String(decoding: $0, as: UTF8.self) }
    #expect(fast != nil, "left \(value) to Foundation", sourceLocation: sourceLocation)
    #expect(fast == expected, sourceLocation: sourceLocation)
  }

  /// Base64 in a string, with Foundation's escaped slash.
  @Test func dataIsBase64() throws {
    try expectQuick(Data([1, 2, 3]))
    try expectQuick(["empty": Data(), "slash": Data([0xFB, 0xFF])])
    try expectQuick([Data([0xFB, 0xFF, 0xBF])])
  }

  /// The fast path left `value` to Foundation, and `encode` still gives Foundation's bytes.
  func expectFoundation<T: Encodable>(
    _ value: T, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    #expect(quick.quickly(value) == nil, sourceLocation: sourceLocation)
    #expect(try quick.encode(value) == foundation.encode(value), sourceLocation: sourceLocation)
  }

  @Test func plainValuesTakeTheFastPath() throws {
    try expectQuick(BenchmarkValue(count: 3, maxCount: 7, minCount: -2, numberOfCounts: 9))
    try expectQuick(
      Profile(
        name: "Blob \"Jr\" / ключ 🔑", age: 255, tags: ["", "a\\b", "\u{7F}\u{2028}"],
        flags: ["b": true, "a": false, "B": true, "10": false, "2": true, "a-b": false],
        history: [[], [Int64.min, 0, Int64.max]], role: .guest,
        status: .away(since: 3, note: nil), friend: BenchmarkValue(), nothing: nil, small: -128,
        wide: .max))
    try expectQuick(Profile.Status.online)
    try expectQuick(Custom())
    try expectQuick(42)
    try expectQuick("top level")
    try expectQuick([Int?.none, 1])
    try expectQuick([3: "three", 10: "ten", -1: "minus one"])
    try expectQuick(Set([5]))
  }

  @Test func controlCharactersAreEscapedAsFoundationDoes() throws {
    let everyASCII = String(decoding: Array(0..<0x80), as: UTF8.self)
    try expectQuick([everyASCII: everyASCII])
  }

  /// The writer that cluster records and etcd's requests use writes Foundation's bytes for the
  /// same members given in sorted order.
  @Test func theWriterWritesWhatFoundationWrites() throws {
    struct Shape: Encodable {
      var counts: [String: Int64]
      var list: [UInt64]
      var name: String
      var nested: [String: [String: UInt64]]
    }
    let everyASCII = String(decoding: Array(0..<0x80), as: UTF8.self)
    let shape = Shape(
      counts: ["b": -3, "a": .min, everyASCII: .max], list: [0, 9, 10, .max], name: everyASCII + "é",
      nested: ["only": [:]])
    var json = JSONWriter()
    json.beginObject()
    json.key("counts")
    json.object(sorting: shape.counts)
    json.key("list")
    json.beginArray()
    for number in shape.list { json.number(number) }
    json.endArray()
    json.key("name")
    json.string(shape.name)
    json.key("nested")
    json.beginObject()
    json.key("only")
    json.object(sorting: [String: UInt64]())
    json.endObject()
    json.endObject()
    let foundation = JSONEncoder()
    foundation.outputFormatting = .sortedKeys
    #expect(String(decoding: json.bytes, as: UTF8.self) == String(decoding: try foundation.encode(shape), as: UTF8.self))
  }

  /// Shortest round-trip digits, no `.0` on a whole number, an exponent past 10¹⁶ or under 10⁻⁴.
  @Test func numbersAreWrittenAsFoundationWritesThem() throws {
    var random = SplitMix64(seed: 0xF10A7)
    try expectQuick([0.0, -0.0, 1, -1.5, 0.1, 1e15, 1e16, 1e-4, 1e-5, 5e-324, .greatestFiniteMagnitude])
    for _ in 0..<2_000 {
      let bits = Double(bitPattern: random.next())
      let scaled = Double(random.next(below: 1_000)) * pow(10, Double(Int(random.next(below: 50)) - 25))
      try expectQuick(["bits": bits.isFinite ? bits : 0, "scaled": scaled])
    }
  }

  /// Foundation refuses them with an error of its own.
  @Test func aNaNOrAnInfinityIsLeftToFoundation() {
    for number in [Double.nan, .infinity, -.infinity] {
      #expect(quick.quickly(["ratio": number]) == nil)
      #expect(throws: EncodingError.self) { try quick.encode(["ratio": number]) }
    }
  }

  @Test func whatOnlyFoundationWritesIsLeftToIt() throws {
    try expectFoundation(["ratio": Float(0.1)])
    try expectFoundation([Date(timeIntervalSince1970: 0)])
    try expectFoundation(URL(string: "https://example.com/a")!)
    try expectFoundation(Decimal(string: "1.25")!)
    try expectFoundation(["é": 1, "e": 2])
    try expectFoundation(Custom(twice: true))
    try expectFoundation([Box()])
    try expectFoundation(["nothing": Nothing()])
  }

  final class Box: Encodable {
    let count = 1
  }

  struct Nothing: Encodable {
    func encode(to _: any Encoder) throws {}
  }
}
