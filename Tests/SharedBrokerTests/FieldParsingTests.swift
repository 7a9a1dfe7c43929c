import Foundation
import SharedBroker
import SharedBrokerServer
import Testing

/// The wire fields' edge cases: numbers at the top of `UInt64`, and control characters in keys.
@Suite struct FieldParsingTests {
  func write(write: String = "1", key: String = "k", base: String = "0") -> [Data] {
    [Data("WRITE".utf8), Data("c".utf8), Data(write.utf8), Data(key.utf8), Data(base.utf8), Data("1".utf8)]
  }

  @Test func numbersUpToUInt64MaxParse() throws {
    let message = try BrokerMessage(frames: write(write: "18446744073709551615", base: "70"))
    #expect(message == .write(client: "c", write: .max, key: "k", base: 70, value: Data("1".utf8)))
    #expect(try BrokerMessage(frames: write(base: "0")) == .write(client: "c", write: 1, key: "k", base: 0, value: Data("1".utf8)))
  }

  /// One canonical form per number: a leading zero is refused, as anything but digits is.
  @Test(arguments: [
    "18446744073709551616", "99999999999999999999", "", "-1", "+1", " 1", "1e3", "０", "01", "00", "007",
  ])
  func otherNumbersAreMalformed(number: String) {
    #expect(throws: BrokerProtocolError.self) { try BrokerMessage(frames: write(write: number)) }
  }

  @Test(arguments: ["a\u{0}b", "tab\there", "del\u{7F}", "c1\u{85}next", "\u{9F}"])
  func keysWithControlCharactersAreInvalid(key: String) {
    #expect(throws: BrokerProtocolError.invalidKey) { try BrokerMessage(frames: write(key: key)) }
  }

  @Test(arguments: ["ключ/🔑 with spaces", "\u{A0}nbsp", "zero\u{200B}width", "a:b.c-d_e"])
  func keysWithOtherCharactersAreValid(key: String) throws {
    guard case let .write(_, _, parsed, _, _, _, _) = try BrokerMessage(frames: write(key: key)) else {
      Issue.record("not a write")
      return
    }
    #expect(parsed == key)
  }
}
