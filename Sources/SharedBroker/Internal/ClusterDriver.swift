import Foundation

/// Carries the broker machine's commits to a cluster's shared store, and turns the store's
/// events into the machine's inputs, on the broker's thread: outcomes, the changes other brokers
/// made (decoded, the broker's own echoes left out), and the store's availability. The real
/// broker and the simulation in the tests drive the same driver.
final class ClusterDriver {
  let cluster: any BrokerCluster
  /// Whether the store answered lately, as its last availability event said.
  private(set) var isAvailable = true
  /// Each key's record last sent to be stored, until the watch brings it back: the commit's
  /// answer, or the same commit sent again, tells the machine of it, so its echo is left out
  /// (the machine would otherwise decode the broker's own record once more per write).
  private var unechoed: [String: Data] = [:]

  init(cluster: any BrokerCluster) {
    self.cluster = cluster
  }

  /// Every key's record, decoded (records that do not decode are left out).
  func loadAll() throws -> [String: StoredRecord] {
    try cluster.loadAll().compactMapValues(Self.decode)
  }

  /// Sends a commit; its outcome comes back as an event, or at once when the store is known to
  /// be unreachable (nothing is sent then).
  func commit(_ commit: BrokerMachine.Commit) -> BrokerMachine.CommitOutcome? {
    guard isAvailable else { return .refused("the shared store (etcd) is unreachable") }
    let data = commit.record?.encoded()
    if let data { unechoed[commit.key] = data }
    cluster.commit(key: commit.key, record: data, expecting: commit.revision, id: commit.token)
    return nil
  }

  /// What the store's events since the last call mean to the machine, in their order.
  func takeEvents() -> [BrokerMachine.StoreEvent] {
    cluster.takeEvents().compactMap { event in
      switch event {
      case .committed(let token, let result):
        return .committed(token, Self.outcome(result))
      case .changed(let changes, let followsHistory):
        let stored = changes.compactMap { change -> (key: String, stored: StoredRecord)? in
          if followsHistory, unechoed[change.key] == change.record.data {
            unechoed[change.key] = nil
            return nil
          }
          return Self.decode(change.record).map { (change.key, $0) }
        }
        return stored.isEmpty ? nil : .watched(stored)
      case .availability(let available):
        isAvailable = available
        return .available(available)
      }
    }
  }

  private static func outcome(_ result: Result<BrokerClusterCommit, any Error>)
    -> BrokerMachine.CommitOutcome
  {
    switch result {
    case .success(.stored(let revision)): return .stored(revision: revision)
    case .success(.changed(nil)): return .changed(nil)
    case .success(.changed(let current?)):
      guard let stored = decode(current) else {
        return .refused("the key's stored record is not one a broker wrote")
      }
      return .changed(stored)
    case .failure(let error): return .unanswered("\(error)")
    }
  }

  private static func decode(_ record: BrokerClusterRecord) -> StoredRecord? {
    guard let decoded = try? ClusterRecord(decoding: record.data) else { return nil }
    return StoredRecord(revision: record.revision, record: decoded)
  }
}
