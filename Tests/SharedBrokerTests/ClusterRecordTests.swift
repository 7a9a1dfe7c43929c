import Foundation
import Testing

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// A cluster record's bytes: what goes through etcd on every write and every watch.
@Suite struct ClusterRecordTests {
  private func record(recent: [BrokerEntry.Applied]) -> ClusterRecord {
    var entry = BrokerEntry(
      version: recent.last?.version ?? 0, value: Data(#"{"count":3}"#.utf8), lastWrites: ["a": 9])
    entry.recent = recent
    entry.written = ["a": 1_764_000_000_000]
    return ClusterRecord(entry: entry, client: "a", write: 9, commit: "broker-1/7")
  }

  @Test func recentWritesRoundTripInRuns() throws {
    // One writer's run, then two writers taking turns, then a gap in one writer's ids.
    var recent = (1...100).map { BrokerEntry.Applied(version: $0, client: "a", write: $0 + 10) }
    for version in UInt64(101)...110 {
      recent.append(.init(version: version, client: version % 2 == 0 ? "a" : "b", write: version))
    }
    recent.append(.init(version: 111, client: "b", write: 500))
    recent.append(.init(version: 112, client: "b", write: 502))
    let original = record(recent: recent)

    let bytes = original.encoded()
    #expect(try ClusterRecord(decoding: bytes) == original)
    // 113 writes take 60 bytes each as single entries; as runs, a one-writer stretch takes one.
    #expect(bytes.count < 1_200, "\(bytes.count) bytes")
  }

  @Test func aRecordWithoutRecentWritesStaysWithout() throws {
    var original = record(recent: [])
    original.entry.recent = nil
    #expect(try ClusterRecord(decoding: original.encoded()) == original)
  }

  /// The header is written by hand; Foundation's decoder (which the fast one falls back to, and
  /// brokers of earlier releases used) reads it as the Codable form, every field and escape kept.
  @Test func aHeaderWithEveryFieldReadsWithFoundation() throws {
    var original = record(recent: [.init(version: 1, client: "quote\"slash/\u{1}é", write: 2)])
    original.entry.lastWrites = ["quote\"slash/\u{1}é": 2, "a": 9, "b": .max]
    original.entry.written = ["a": -5, "b": .max]
    original.entry.lastClient = "b"
    original.entry.instance = "01795691165967088-cb344a7d"
    original.adoptedFrom = SeedOrigin(instance: "0179-older", version: 4)
    #expect(try ClusterRecord(decoding: original.encoded()) == original)

    let json = original.headerJSON()
    #expect(try JSONSerialization.jsonObject(with: Data(json)) is [String: Any])
    var decoded = try JSONDecoder().decode(ClusterRecord.self, from: Data(json))
    #expect(decoded.entry.value.isEmpty)
    decoded.entry.value = original.entry.value
    var expected = original
    expected.entry.recent = nil
    // The runs stay in their decoded form; ClusterRecord(decoding:) expands them (above).
    #expect(decoded.entry == expected.entry)
    #expect(decoded.client == original.client && decoded.write == original.write)
    #expect(decoded.adoptedFrom == original.adoptedFrom && decoded.commit == original.commit)
  }

  @Test func aRecordClaimingEndlessWritesIsRefused() throws {
    // Crafted, as a damaged or hostile record in etcd could be: a run of 2^62 writes, and one
    // that would count past the largest version.
    for run in [#"{"c":"a","v":1,"w":1,"n":4611686018427387904}"#, #"{"c":"a","v":18446744073709551615,"w":1,"n":2}"#] {
      let header = Data(
        #"{"entry":{"version":1,"value":"","lastWrites":{}},"client":"a","write":1,"recentRuns":[\#(run)]}"#
          .utf8)
      var bytes = Data([1])
      withUnsafeBytes(of: UInt32(header.count).bigEndian) { bytes.append(contentsOf: $0) }
      bytes.append(header)
      #expect(throws: DecodingError.self) { try ClusterRecord(decoding: bytes) }
    }
  }
}
