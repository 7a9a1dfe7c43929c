import Foundation
import QuickJSON
import SharedBroker
import SharedBrokerServer
import TestSupport
import Testing

/// The fast JSON path gives Foundation's result or leaves the document to Foundation: it never
/// decodes something Foundation would decode differently, or would refuse.
@Suite struct QuickJSONDecoderTests {
  struct Profile: Codable, Equatable {
    enum Role: String, Codable { case owner, guest }
    enum Status: Codable, Equatable {
      case online
      case away(since: Int, note: String?)
    }
    var name: String
    var age: UInt8
    var score: Double
    var tags: [String]
    var flags: [String: Bool]
    var history: [[Int64]]
    var role: Role
    var status: Status
    var friend: BenchmarkValue?
    var nothing: Int?
  }

  let quick = QuickJSONDecoder()
  let foundation = JSONDecoder()

  func data(_ json: String) -> Data { Data(json.utf8) }

  /// The fast path took `json` and agrees with Foundation.
  func expectQuick<T: Decodable & Equatable>(
    _: T.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let expected = try foundation.decode(T.self, from: data(json))
    let fast = quick.quickly(T.self, from: data(json))
    #expect(fast != nil, "the fast path left \(json) to Foundation", sourceLocation: sourceLocation)
    #expect(fast == expected, sourceLocation: sourceLocation)
  }

  @Test func plainValuesTakeTheFastPath() throws {
    try expectQuick(
      BenchmarkValue.self, #"{"count":3,"maxCount":7,"minCount":-2,"numberOfCounts":9}"#)
    try expectQuick(
      BenchmarkValue.self,
      " {\n\t\"minCount\" : 0 , \"numberOfCounts\":1,\"count\":-0,\"maxCount\":12 }\r\n"
    )
    try expectQuick(Int.self, "42")
    try expectQuick(String.self, #""top level""#)
    try expectQuick(
      [Double].self, "[0, -0.0, 1.5, -2e-3, 1E+2, 123456789012345678901234567890, 5e-324]")
    try expectQuick([Bool?].self, "[true, false, null]")
    try expectQuick(
      [String].self,
      #"["", "quote \" slash \/ back \\ \b\f\n\r\t", "\u00e9\u0000", "\ud83d\ude00", "ключ 🔑"]"#
    )
    try expectQuick([Int8].self, "[127, -128]")
    try expectQuick([UInt64].self, "[18446744073709551615, 0]")
    try expectQuick([Int64].self, "[-9223372036854775808, 9223372036854775807]")
    try expectQuick([String: [Int]].self, #"{"a": [], "b": [1, 2], "": [3]}"#)
    let profile = Profile(
      name: "Blob \"Jr\"\n", age: 42, score: 0.1 + 0.2, tags: ["a", "é", "😀"],
      flags: ["x": true, "y": false], history: [[1, -2], [], [.max]], role: .guest,
      status: .away(since: 3, note: nil), friend: BenchmarkValue(count: 1), nothing: nil
    )
    let encoded = try JSONEncoder().encode(profile)
    #expect(quick.quickly(Profile.self, from: encoded) == profile)
  }

  /// Documents and types whose result depends on how Foundation reads them.
  @Test(
    arguments: [
      #"{"count":1,"count":2,"maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"\u0063ount":1,"maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"count":1.0,"maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"count":1e2,"maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"count":99999999999999999999,"maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"count":"1","maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"count":null,"maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"maxCount":0,"minCount":0,"numberOfCounts":0}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,"x":"\ud800"}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,"x":"\q"}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,"x":01}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,"x":0e3}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,"x":-0E+3}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,"x":0.00e1}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,}"#,
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0} x"#,
      "{\"count\":1,\"maxCount\":0,\"minCount\":0,\"numberOfCounts\":0,\"x\":\"tab\there\"}",
      #"{"count":1,"maxCount":0,"minCount":0,"numberOfCounts":0,"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
      "",
      "nul",
    ]
  )
  func doubtfulDocumentsGoToFoundation(json: String) {
    #expect(quick.quickly(BenchmarkValue.self, from: data(json)) == nil)
    expectSameOutcome(BenchmarkValue.self, data(json))
  }

  /// Foundation finds keys by Swift string equality, which is canonical equivalence.
  @Test func keysMatchAsSwiftStringsDo() throws {
    struct Kelvin: Codable, Equatable {
      enum CodingKeys: String, CodingKey { case kelvin = "\u{212A}" }
      var kelvin: Int?
    }
    #expect(quick.quickly(Kelvin.self, from: data("{\"\u{212A}\":1}")) == nil)
    #expect(quick.quickly([String: Int].self, from: data(#"{"é":1}"#)) == nil)
    try expectQuick(Kelvin.self, #"{"K":1}"#)
    #expect(try quick.decode(Kelvin.self, from: data("{\"\u{212A}\":1}")) == Kelvin(kelvin: 1))
  }

  @Test func specialTypesGoToFoundation() throws {
    #expect(quick.quickly(Date.self, from: data("0")) == nil)
    #expect(quick.quickly(URL.self, from: data(#""https://example.com""#)) == nil)
    #expect(quick.quickly(Decimal.self, from: data("1.5")) == nil)
    #expect(quick.quickly(Float.self, from: data("0.1")) == nil)
    #expect(quick.quickly(Double.self, from: data("1e400")) == nil)
    #expect(quick.quickly(Double.self, from: data("1e-400")) == nil)
    #expect(quick.quickly(UInt.self, from: data("-0")) == nil)
    #expect(try quick.decode(Date.self, from: data("0")) == Date(timeIntervalSinceReferenceDate: 0))
  }

  /// Base64 in a string, as Foundation's default strategy reads it; what is not base64 goes to
  /// Foundation, which makes the error.
  @Test func dataIsBase64() throws {
    try expectQuick([Data].self, #"["AQID","","+\/8=","+/8="]"#)
    #expect(quick.quickly(Data.self, from: data(#""AQID ""#)) == nil)
    #expect(throws: DecodingError.self) { try quick.decode([Data].self, from: data(#"["A"]"#)) }
  }

  @Test func largeDocumentsGoToFoundation() throws {
    let wide = "{" + (0..<33).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"
    #expect(quick.quickly([String: Int].self, from: data(wide)) == nil)
    #expect(try quick.decode([String: Int].self, from: data(wide)).count == 33)
    let long = "[" + Array(repeating: "1", count: 3_000).joined(separator: ",") + "]"
    #expect(quick.quickly([Int].self, from: data(long)) == nil)
    #expect(try quick.decode([Int].self, from: data(long)).count == 3_000)
    var invalidUTF8 = data(#"[""#)
    invalidUTF8.append(contentsOf: [0xC3, 0x28] + Array(#""]"#.utf8))
    #expect(quick.quickly([String].self, from: invalidUTF8) == nil)
    expectSameOutcome([String].self, invalidUTF8)
  }

  /// A type that catches a decoding error itself: the fast path may have thrown for a reason
  /// Foundation would not, so its result is not used.
  @Test func aCaughtErrorLeavesTheDocumentToFoundation() throws {
    struct Lenient: Decodable, Equatable {
      enum CodingKeys: CodingKey { case when }
      var when: Double?
      init(from decoder: any Decoder) throws {
        when = try? decoder.container(keyedBy: CodingKeys.self).decode(Double.self, forKey: .when)
      }
    }
    #expect(quick.quickly(Lenient.self, from: data(#"{"when":"soon"}"#)) == nil)
    #expect(
      try quick.decode(Lenient.self, from: data(#"{"when":1e400}"#))
        == foundation.decode(Lenient.self, from: data(#"{"when":1e400}"#)))
    try expectQuick(Lenient.self, #"{"when":2.5}"#)
  }

  /// Foundation calls an integer its type cannot hold "not valid JSON"; the error names the
  /// field and the type's range instead.
  @Test func anIntegerOutOfRangeNamesItsFieldAndTheRange() {
    func failure<T: Decodable>(_: T.Type, _ json: String) -> (path: [String], message: String) {
      do {
        _ = try quick.decode(T.self, from: data(json))
      } catch DecodingError.dataCorrupted(let context) {
        let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
        return (path, context.debugDescription)
      } catch {
        return ([], "\(error)")
      }
      return ([], "decoded")
    }
    let tooLarge = failure(
      BenchmarkValue.self,
      #"{"count":9223372036854775808,"maxCount":0,"minCount":0,"numberOfCounts":0}"#)
    #expect(tooLarge.path == ["count"])
    #expect(
      tooLarge.message
        == "9223372036854775808 is outside the range of Int "
        + "(-9223372036854775808...9223372036854775807).")
    let element = failure([String: [UInt8]].self, #"{"a":[1,256]}"#)
    #expect(element.path == ["a", "1"])
    #expect(element.message == "256 is outside the range of UInt8 (0...255).")
    let negative = failure(UInt.self, "-1")
    #expect(negative.path == [])
    #expect(negative.message.hasPrefix("-1 is outside the range of UInt (0..."))
  }

  /// Random values, then random damage to their JSON: the two decoders agree on every one.
  @Test func randomDocumentsDecodeAsFoundationDecodesThem() throws {
    var random = SplitMix64(seed: 0x5EED)
    let alphabet = Array("aZ09 \"\\/\n\t\u{0}\u{1F}é€😀")
    var quickHits = 0
    for round in 0..<2_000 {
      let score = Double(bitPattern: random.next())
      let profile = Profile(
        name: String(
          (0..<random.next(below: 12)).map { _ in alphabet[random.next(below: alphabet.count)] }),
        age: UInt8(random.next(below: 256)),
        score: score.isFinite ? score : 0.5,
        tags: (0..<random.next(below: 4)).map { String($0) },
        flags: ["f\(random.next(below: 3))": random.next(below: 2) == 0],
        history: [[Int64(bitPattern: random.next())], []],
        role: random.next(below: 2) == 0 ? .owner : .guest,
        status: random.next(below: 2) == 0
          ? .online : .away(since: random.next(below: 100), note: "n"),
        friend: random.next(below: 2) == 0
          ? nil : BenchmarkValue(count: random.next(below: 1_000)),
        nothing: nil
      )
      var encoded = try JSONEncoder().encode(profile)
      if round % 2 == 1, !encoded.isEmpty {
        let damaged = random.next(below: encoded.count)
        let replacements = Array(#"{}[],:"\ 0-e.ntfu1"#.utf8) + [0x80, 0xFF]
        encoded[damaged] = replacements[random.next(below: replacements.count)]
      }
      if quick.quickly(Profile.self, from: encoded) != nil { quickHits += 1 }
      expectSameOutcome(Profile.self, encoded)
    }
    // Every undamaged document (and some damaged ones that are still plain JSON) took the fast path.
    #expect(quickHits >= 1_000)
  }

  func expectSameOutcome<T: Decodable & Equatable>(
    _: T.Type, _ data: Data, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let expected = try? foundation.decode(T.self, from: data)
    let fast = quick.quickly(T.self, from: data)
    let decoded = try? quick.decode(T.self, from: data)
    let text = String(decoding: data, as: UTF8.self)
    #expect(decoded == expected, "\(text)", sourceLocation: sourceLocation)
    if let fast { #expect(fast == expected, "\(text)", sourceLocation: sourceLocation) }
  }
}
