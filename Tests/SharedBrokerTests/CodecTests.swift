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

  @Test func aKeyWithItsOwnEncodingMirrorsAndReportsBadBytes() async throws {
    try await withBrokerFixture { fixture in
      let first = fixture.makeClient()
      let second = fixture.makeClient()
      let key = { BrokerKey<Point>.broker("point", decode: Self.decode, encode: Self.encode) }
      let a = await inProcess(first) { Shared(wrappedValue: Point(x: 0, y: 0), key()) }
      let b = await inProcess(second) { Shared(wrappedValue: Point(x: 0, y: 0), key()) }
      try await first.waitUntilConnected()
      try await second.waitUntilConnected()

      let seenByB = b.values
      a.withLock { $0.x += 3 }
      b.withLock { $0.y += 4 }
      #expect(await firstValue(in: seenByB) { $0 == Point(x: 3, y: 4) } == Point(x: 3, y: 4))
      try await first.waitUntilConfirmed()
      try await second.waitUntilConfirmed()
      #expect(a.wrappedValue == Point(x: 3, y: 4))

      // The bytes on the broker are the key's own: a client that reads them as text sees them.
      // Bytes that do not decode leave the last good value, with a coded error.
      let seenByA = a.values
      let writer = fixture.makeClient()
      let garbage = await inProcess(writer) {
        Shared(
          wrappedValue: "",
          .broker("point", decode: Self.text, encode: { @Sendable in Data($0.utf8) })
        )
      }
      try await writer.waitUntilConnected()
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
}
