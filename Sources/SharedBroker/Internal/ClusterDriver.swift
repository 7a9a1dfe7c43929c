import Foundation
import Synchronization

/// Carries the broker machine's commits to a cluster's shared store, and hands back their
/// outcomes and the watched changes on the broker's thread: answers arrive on the store's
/// threads, wait here, and wake the broker.
final class ClusterDriver: Sendable {
  let cluster: any BrokerCluster
  private let outcomes = Mutex<[(token: UInt64, outcome: BrokerMachine.CommitOutcome)]>([])
  private let wake: @Sendable () -> Void

  init(cluster: any BrokerCluster, wake: @escaping @Sendable () -> Void) {
    self.cluster = cluster
    self.wake = wake
    cluster.setOnChange(wake)
  }

  /// Every key's record, decoded (records that do not decode are left out).
  func loadAll() throws -> [String: StoredRecord] {
    try cluster.loadAll().compactMapValues(Self.decode)
  }

  /// Sends a commit; its outcome comes back through ``takeOutcomes()``, or at once when the
  /// store is known to be unreachable (nothing is sent then).
  func commit(_ commit: BrokerMachine.Commit) -> BrokerMachine.CommitOutcome? {
    guard cluster.isAvailable else { return .refused("the shared store (etcd) is unreachable") }
    let data = commit.record?.encoded()
    let token = commit.token
    cluster.commit(key: commit.key, record: data, expecting: commit.revision) { [self] result in
      let outcome: BrokerMachine.CommitOutcome
      switch result {
      case .success(.stored(let revision)): outcome = .stored(revision: revision)
      case .success(.changed(nil)): outcome = .changed(nil)
      case .success(.changed(let current?)):
        if let stored = Self.decode(current) {
          outcome = .changed(stored)
        } else {
          outcome = .refused("the key's stored record is not one a broker wrote")
        }
      case .failure(let error): outcome = .unanswered("\(error)")
      }
      outcomes.withLock { $0.append((token, outcome)) }
      wake()
    }
    return nil
  }

  /// The outcomes that arrived since the last call.
  func takeOutcomes() -> [(token: UInt64, outcome: BrokerMachine.CommitOutcome)] {
    outcomes.withLock { outcomes in
      defer { outcomes = [] }
      return outcomes
    }
  }

  /// What other brokers stored since the last call, decoded; changes at or below the revision
  /// `known` gives for their key (the broker's own commits, echoed by the watch) are dropped
  /// without decoding.
  func takeChanges(known: (String) -> Int64) -> [(key: String, stored: StoredRecord)] {
    cluster.takeChanges().compactMap { change in
      guard change.record.revision > known(change.key) else { return nil }
      return Self.decode(change.record).map { (change.key, $0) }
    }
  }

  private static func decode(_ record: BrokerClusterRecord) -> StoredRecord? {
    guard let decoded = try? ClusterRecord(decoding: record.data) else { return nil }
    return StoredRecord(revision: record.revision, record: decoded)
  }
}
