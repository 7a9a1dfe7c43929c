import Foundation

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// A transaction a broker's driver sent to etcd: put `record` (or, with `nil`, only check) if
/// `key` is at `revision`.
struct EtcdCommit {
  let key: String
  let record: Data?
  let revision: Int64
  /// The driver's id for its answer.
  let id: UInt64
}

/// etcd's answer lost, or not in time: the driver's client gives up on it.
struct EtcdUnanswered: Error, CustomStringConvertible {
  let description: String
}

/// The simulation's etcd: one linearizable key space with a revision that grows on every put,
/// compare-and-set transactions on a key's revision, and a history that brokers' watches read
/// in order until it is compacted away. It stores the bytes brokers send, as etcd does.
final class SimulatedEtcd {
  /// The id of the cluster's data, which every broker announces.
  let instance = "00000000000000000-cluster"
  private(set) var records: [String: BrokerClusterRecord] = [:]
  /// The records decoded, for the simulation's checks.
  private(set) var decoded: [String: ClusterRecord] = [:]
  private(set) var revision: Int64 = 0
  /// Every put since `compacted`, in order.
  private var history: [(key: String, record: BrokerClusterRecord)] = []
  /// Revisions before this one are no longer in `history`.
  private(set) var compacted: Int64 = 1
  /// Puts and checks carried out.
  private(set) var transactions = 0
  /// Client records that puts dropped (expired).
  private(set) var expiredRecords = 0

  /// One transaction: puts the commit's record, or only checks, if the key is at the revision
  /// the commit compares; otherwise answers with the key's record. A record that does not
  /// decode as a broker's is an error of the broker that wrote it.
  func apply(_ commit: EtcdCommit) throws -> BrokerClusterCommit {
    transactions += 1
    guard (records[commit.key]?.revision ?? 0) == commit.revision else {
      return .changed(records[commit.key])
    }
    guard let data = commit.record else { return .stored(revision: commit.revision) }
    let record = try ClusterRecord(decoding: data)
    revision += 1
    let before = Set(decoded[commit.key]?.entry.lastWrites.keys ?? [:].keys)
    expiredRecords += before.subtracting(record.entry.lastWrites.keys).count
    let stored = BrokerClusterRecord(data: data, revision: revision)
    records[commit.key] = stored
    decoded[commit.key] = record
    history.append((commit.key, stored))
    return .stored(revision: revision)
  }

  /// An unconditional put, as a broker records whom it heard from.
  func put(key: String, record: Data) {
    transactions += 1
    revision += 1
    let stored = BrokerClusterRecord(data: record, revision: revision)
    records[key] = stored
    history.append((key, stored))
  }

  /// An unconditional delete, as a broker removes a stopped broker run's record; a watch does
  /// not report it, as the real store's leaves deletions out.
  func remove(key: String) {
    transactions += 1
    revision += 1
    records[key] = nil
  }

  /// What a watch that has delivered everything before `next` gets now, and where it resumes:
  /// the puts since (`history`), or, when they were compacted away, every key as it is.
  func changes(from next: Int64) -> (
    changes: [(key: String, record: BrokerClusterRecord)], next: Int64, history: Bool
  ) {
    guard next >= compacted else {
      let all = records.sorted { $0.value.revision < $1.value.revision }.map {
        (key: $0.key, record: $0.value)
      }
      return (all, revision + 1, false)
    }
    let start = history.firstIndex { $0.record.revision >= next } ?? history.endIndex
    return (Array(history[start...]), revision + 1, true)
  }

  /// Forgets the history before the current revision, as etcd's compaction does.
  func compact() {
    compacted = revision + 1
    history = []
  }
}
