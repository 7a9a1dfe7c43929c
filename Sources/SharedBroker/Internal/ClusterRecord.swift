import Foundation

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
}

extension ClusterRecord {
  /// The format of ``encoded()``; a record stored before it is plain JSON, starting with `{`.
  private static let format: UInt8 = 1

  /// The record's bytes: the format, the length of the JSON of everything but the value, that
  /// JSON, then the value as it is, so the value is not base64-encoded inside the JSON (etcd's
  /// gateway base64-encodes the whole record once more).
  func encoded() throws -> Data {
    var header = self
    header.entry.value = Data()
    let json = try JSONEncoder().encode(header)
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
    guard data.count >= 5 else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a record cut short")) }
    let length = data[data.startIndex + 1..<start].reduce(0) { $0 << 8 | Int($1) }
    guard data.count - 5 >= length else {
      throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a record cut short"))
    }
    self = try JSONDecoder().decode(ClusterRecord.self, from: data[start..<start + length])
    entry.value = Data(data[(start + length)...])
  }
}

/// A record read from a cluster, with the revision the store gave it.
struct StoredRecord: Equatable {
  let revision: Int64
  let record: ClusterRecord
}
