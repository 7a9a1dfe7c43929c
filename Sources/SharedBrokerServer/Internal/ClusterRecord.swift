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
  /// The entry's recent writes, in runs, as ``headerJSON()`` writes them in place of
  /// `entry.recent`: set only while decoding, then expanded back into the entry.
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
  /// Every watched change decodes a record: the fast decoder.
  private static let decoder = QuickJSONDecoder()

  /// The record's bytes: the format, the length of the JSON of everything but the value, that
  /// JSON, then the value as it is, so the value is not base64-encoded inside the JSON (etcd's
  /// gateway base64-encodes the whole record once more).
  func encoded() -> Data {
    let header = headerJSON()
    var data = Data(capacity: 5 + header.count + entry.value.count)
    data.append(Self.format)
    withUnsafeBytes(of: UInt32(header.count).bigEndian) { data.append(contentsOf: $0) }
    data.append(contentsOf: header)
    data.append(entry.value)
    return data
  }

  /// The JSON of everything but the value, as the Codable form with an empty value and the recent
  /// writes in runs encodes with sorted keys, written directly: every commit writes one on the
  /// broker's thread before it leaves.
  func headerJSON() -> [UInt8] {
    var json = JSONWriter()
    json.beginObject()
    if let adoptedFrom {
      json.key("adoptedFrom")
      json.beginObject()
      json.key("instance")
      json.string(adoptedFrom.instance)
      json.key("version")
      json.number(adoptedFrom.version)
      json.endObject()
    }
    json.key("client")
    json.string(client)
    if let commit {
      json.key("commit")
      json.string(commit)
    }
    json.key("entry")
    json.beginObject()
    if let instance = entry.instance {
      json.key("instance")
      json.string(instance)
    }
    if let lastClient = entry.lastClient {
      json.key("lastClient")
      json.string(lastClient)
    }
    json.key("lastWrites")
    json.object(sorting: entry.lastWrites)
    json.key("value")
    json.string("")
    json.key("version")
    json.number(entry.version)
    if let written = entry.written {
      json.key("written")
      json.object(sorting: written)
    }
    json.endObject()
    if let recent = entry.recent {
      json.key("recentRuns")
      json.beginArray()
      for run in WriteRun.runs(of: recent) {
        json.beginObject()
        json.key("c")
        json.string(run.client)
        json.key("n")
        json.number(run.count)
        json.key("v")
        json.number(run.version)
        json.key("w")
        json.number(run.write)
        json.endObject()
      }
      json.endArray()
    }
    json.key("write")
    json.number(write)
    json.endObject()
    return json.bytes
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
