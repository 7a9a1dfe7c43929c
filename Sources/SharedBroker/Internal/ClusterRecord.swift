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

/// A record read from a cluster, with the revision the store gave it.
struct StoredRecord: Equatable {
  let revision: Int64
  let record: ClusterRecord
}
