import Dependencies
import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing

/// A `.broker` key with an encoding of its own, as `.fileStorage` takes one.
@Suite(.timeLimit(.minutes(1)))
struct CodecTests {
  /// Not `Codable`: only the key's own functions know its bytes.
  struct Point: Equatable, Sendable {
    var x: Int
    var y: Int
  }

  static func decode(_ data: Data) throws -> Point {
    let parts = String(decoding: data, as: UTF8.self).split(separator: ",").compactMap { Int($0) }
    guard parts.count == 2 else { throw CocoaError(.coderReadCorrupt) }
    return Point(x: parts[0], y: parts[1])
  }

  static func encode(_ point: Point) -> Data { Data("\(point.x),\(point.y)".utf8) }

  @Sendable static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

  /// A client of its own that reads and writes `key`'s bytes as text, once connected.
  static func textClient(
    of fixture: BrokerFixture, key: String
  ) async throws -> (BrokerClient, Shared<String>) {
    let client = fixture.makeClient()
    let text = await inProcess(client) {
      Shared(wrappedValue: "", .broker(key, decode: Self.text, encode: { @Sendable in Data($0.utf8) }))
    }
    try await client.waitUntilConnected()
    return (client, text)
  }

  @Test func aKeyWithItsOwnEncodingMirrorsAndReportsBadBytes() async throws {
    try await withBrokerFixture { fixture in
      let first = fixture.makeClient()
      let second = fixture.makeClient()
      let key = { BrokerKey<Point>.broker("point", decode: Self.decode, encode: Self.encode) }
      let a = await inProcess(first) { Shared(wrappedValue: Point(x: 0, y: 0), key()) }
      let b = await inProcess(second) { Shared(wrappedValue: Point(x: 0, y: 0), key()) }
      try await first.waitUntilConnected()
      try await second.waitUntilConnected()

      let seenByA = a.values
      let seenByB = b.values
      a.withLock { $0.x += 3 }
      b.withLock { $0.y += 4 }
      #expect(await firstValue(in: seenByB) { $0 == Point(x: 3, y: 4) } == Point(x: 3, y: 4))
      // Its own write confirmed, `a` may still wait for `b`'s.
      #expect(await firstValue(in: seenByA) { $0 == Point(x: 3, y: 4) } == Point(x: 3, y: 4))
      try await first.waitUntilConfirmed()
      try await second.waitUntilConfirmed()

      // The bytes on the broker are the key's own: a client that reads them as text sees them.
      // Bytes that do not decode leave the last good value, with a coded error.
      let (writer, garbage) = try await Self.textClient(of: fixture, key: "point")
      #expect(garbage.wrappedValue == "3,4")
      garbage.withLock { $0 = "not a point" }
      try await writer.waitUntilConfirmed()
      _ = await firstValue(in: seenByA) { _ in a.loadError != nil }
      let error = try #require(a.loadError as? BrokerError)
      #expect(error.code == .undecodableValue)
      #expect(error.key == "point")
      #expect(a.wrappedValue == Point(x: 3, y: 4))
    }
  }

  @JSONCodable
  struct Score: Codable, Equatable, Sendable {
    var points = 0
    var player = ""
    var best: Int?
  }

  /// A value with generated code mirrors as any Codable value does: Codable's bytes on the
  /// broker, any member order or spacing taken, a document that does not decode reported.
  @Test func aJSONCodableValueMirrorsWithCodablesBytes() async throws {
    try await withBrokerFixture { fixture in
      let first = fixture.makeClient()
      let second = fixture.makeClient()
      let a = await inProcess(first) { Shared(wrappedValue: Score(), .broker("score")) }
      let b = await inProcess(second) { Shared(wrappedValue: Score(), .broker("score")) }
      try await first.waitUntilConnected()
      try await second.waitUntilConnected()

      let seenByA = a.values
      let seenByB = b.values
      a.withLock { $0.points += 3 }
      b.withLock { $0.player = "Blob \"Jr\"" }
      let expected = Score(points: 3, player: "Blob \"Jr\"")
      #expect(await firstValue(in: seenByB) { $0 == expected } == expected)
      #expect(await firstValue(in: seenByA) { $0 == expected } == expected)
      try await first.waitUntilConfirmed()
      try await second.waitUntilConfirmed()

      let (writer, raw) = try await Self.textClient(of: fixture, key: "score")
      let encoder = JSONEncoder()
      encoder.outputFormatting = .sortedKeys
      #expect(raw.wrappedValue == Self.text(try encoder.encode(expected)))

      raw.withLock { $0 = #"{ "best" : 7, "player": "x", "points": 1, "extra": [] }"# }
      try await writer.waitUntilConfirmed()
      let rewritten = Score(points: 1, player: "x", best: 7)
      #expect(await firstValue(in: seenByA) { $0 == rewritten } == rewritten)

      raw.withLock { $0 = #"{"player":"x","points":"one"}"# }
      try await writer.waitUntilConfirmed()
      _ = await firstValue(in: seenByA) { _ in a.loadError != nil }
      let error = try #require(a.loadError as? BrokerError)
      #expect(error.code == .undecodableValue)
      #expect(a.wrappedValue == rewritten)
    }
  }
}
