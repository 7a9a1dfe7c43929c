import Foundation
import QuickJSON

/// A key's entry as a cluster's shared store holds it, with what an update of its version names.
struct ClusterRecord: Codable, Equatable {
  var entry: BrokerEntry
  /// The client and write that made the entry's version (0 for an adopted copy).
  var client: String
  var write: UInt64
  /// For a key that has only clients' copies so far: the copy a newer one must beat.
  var adoptedFrom: SeedOrigin?
  /// The commit that stored the record: a broker whose commit went unanswered recognizes its own
  /// record when it tries again (absent in records stored before pipelining).
  var commit: String?
  /// The entry's recent writes, in runs, in place of `entry.recent` in ``encoded()``: set only
  /// there, and expanded back into the entry when decoded.
  private var recentRuns: [WriteRun]?

  init(
    entry: BrokerEntry, client: String, write: UInt64, adoptedFrom: SeedOrigin? = nil,
    commit: String? = nil
  ) {
    self.entry = entry
    self.client = client
    self.write = write
    self.adoptedFrom = adoptedFrom
    self.commit = commit
  }

  /// Consecutive applied writes of one client: versions and write ids that each go up by one.
  /// A busy key's recent writes are mostly such runs, so a record stores tens of bytes for them
  /// where one entry per write took about 60, and the record travels through Raft and every
  /// watch on each write.
  struct WriteRun: Codable, Equatable {
    var client: String
    var version: UInt64
    var write: UInt64
    var count: UInt64

    enum CodingKeys: String, CodingKey {
      case client = "c"
      case version = "v"
      case write = "w"
      case count = "n"
    }

    static func runs(of applied: [BrokerEntry.Applied]) -> [WriteRun] {
      var runs: [WriteRun] = []
      for write in applied {
        if let last = runs.last, last.client == write.client,
          write.version &- last.version == last.count, write.write &- last.write == last.count
        {
          runs[runs.count - 1].count += 1
        } else {
          runs.append(
            WriteRun(client: write.client, version: write.version, write: write.write, count: 1))
        }
      }
      return runs
    }

    var applied: some Collection<BrokerEntry.Applied> {
      (0..<count).lazy.map {
        BrokerEntry.Applied(version: version + $0, client: client, write: write + $0)
      }
    }
  }
}

extension ClusterRecord {
  /// The format of ``encoded()``; a record stored before it is plain JSON, starting with `{`.
  private static let format: UInt8 = 1
  /// Every commit encodes a record and every watched change decodes one: the fast coders.
  private static let encoder = QuickJSONEncoder()
  private static let decoder = QuickJSONDecoder()

  /// The record's bytes: the format, the length of the JSON of everything but the value, that
  /// JSON, then the value as it is, so the value is not base64-encoded inside the JSON (etcd's
  /// gateway base64-encodes the whole record once more).
  func encoded() throws -> Data {
    var header = self
    header.entry.value = Data()
    header.recentRuns = entry.recent.map(WriteRun.runs(of:))
    header.entry.recent = nil
    let json = try Self.encoder.encode(header)
    var data = Data([Self.format])
    withUnsafeBytes(of: UInt32(json.count).bigEndian) { data.append(contentsOf: $0) }
    data.append(json)
    data.append(entry.value)
    return data
  }

  /// Reads a record written by ``encoded()``, or by a broker that stored plain JSON.
  init(decoding data: Data) throws {
    guard data.first == Self.format else {
      self = try JSONDecoder().decode(ClusterRecord.self, from: data)
      return
    }
    let start = data.startIndex + 5
    guard data.count >= 5 else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: [], debugDescription: "a record cut short"))
    }
    let length = data[data.startIndex + 1..<start].reduce(0) { $0 << 8 | Int($1) }
    guard data.count - 5 >= length else {
      throw DecodingError.dataCorrupted(
        .init(codingPath: [], debugDescription: "a record cut short"))
    }
    self = try Self.decoder.decode(ClusterRecord.self, from: data[start..<start + length])
    entry.value = Data(data[(start + length)...])
    if let runs = recentRuns {
      // Bounded as the writes they stand for: a damaged record must not make a broker allocate
      // without limit or count past the largest id.
      guard runs.reduce(0, { $0 + min($1.count, 1 << 32) }) <= 4 * UInt64(BrokerEntry.recentWrites),
        runs.allSatisfy({ $0.count <= UInt64.max - max($0.version, $0.write) })
      else {
        throw DecodingError.dataCorrupted(
          .init(
            codingPath: [], debugDescription: "a record with more recent writes than a broker keeps"
          ))
      }
      entry.recent = runs.flatMap(\.applied)
      recentRuns = nil
    }
  }
}

/// A record read from a cluster, with the revision the store gave it.
struct StoredRecord: Equatable {
  let revision: Int64
  let record: ClusterRecord
}
