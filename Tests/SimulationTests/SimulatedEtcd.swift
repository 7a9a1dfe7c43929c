import Foundation

@testable import SharedBroker

/// The simulation's etcd: one linearizable key space with a revision that grows on every put,
/// compare-and-set transactions on a key's revision, and a history that brokers' watches read
/// in order until it is compacted away.
final class SimulatedEtcd {
  /// The id of the cluster's data, which every broker announces.
  let instance = "00000000000000000-cluster"
  private(set) var records: [String: StoredRecord] = [:]
  private(set) var revision: Int64 = 0
  /// Every put since `compacted`, in order.
  private var history: [(key: String, stored: StoredRecord)] = []
  /// Revisions before this one are no longer in `history`.
  private(set) var compacted: Int64 = 1
  /// Puts and checks carried out.
  private(set) var transactions = 0
  /// Client records that puts dropped (expired).
  private(set) var expiredRecords = 0

  /// One transaction: puts the commit's record, or only checks, if the key is at the revision
  /// the commit compares; otherwise answers with the key's record.
  func apply(_ commit: BrokerMachine.Commit) -> BrokerMachine.CommitOutcome {
    transactions += 1
    guard (records[commit.key]?.revision ?? 0) == commit.revision else {
      return .changed(records[commit.key])
    }
    guard let record = commit.record else { return .stored(revision: commit.revision) }
    revision += 1
    let before = Set(records[commit.key]?.record.entry.lastWrites.keys ?? [:].keys)
    expiredRecords += before.subtracting(record.entry.lastWrites.keys).count
    let stored = StoredRecord(revision: revision, record: record)
    records[commit.key] = stored
    history.append((commit.key, stored))
    return .stored(revision: revision)
  }

  /// What a watch that has delivered everything before `next` gets now, and where it resumes:
  /// the puts since (`history`), or, when they were compacted away, every key as it is.
  func changes(from next: Int64) -> (
    changes: [(key: String, stored: StoredRecord)], next: Int64, history: Bool
  ) {
    guard next >= compacted else {
      let all = records.sorted { $0.value.revision < $1.value.revision }.map {
        (key: $0.key, stored: $0.value)
      }
      return (all, revision + 1, false)
    }
    let start = history.firstIndex { $0.stored.revision >= next } ?? history.endIndex
    return (Array(history[start...]), revision + 1, true)
  }

  /// Forgets the history before the current revision, as etcd's compaction does.
  func compact() {
    compacted = revision + 1
    history = []
  }
}
