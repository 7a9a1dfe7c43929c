import Foundation
import QuickJSON

/// Carries the broker machine's commits to a cluster's shared store, and turns the store's
/// events into the machine's inputs, on the broker's thread: outcomes, the changes other brokers
/// made (decoded, the broker's own echoes left out), and the store's availability. The real
/// broker and the simulation in the tests drive the same driver.
final class ClusterDriver {
  let cluster: any BrokerCluster
  /// The store's key where this broker records whom it heard from.
  private let heardKey: String
  /// Whether the store answered lately, as its last availability event said.
  private(set) var isAvailable = true
  /// Each key's record last sent to be stored, until the watch brings it back: the commit's
  /// answer, or the same commit sent again, tells the machine of it, so its echo is left out
  /// (the machine would otherwise decode the broker's own record once more per write).
  private var unechoed: [String: Data] = [:]

  /// Where the brokers record whom they heard from: no shared key can start with a control
  /// character, so these never meet one.
  static let heardPrefix = "\u{1}heard/"

  /// - Parameter run: The broker run this driver serves, naming its record of whom it heard.
  init(cluster: any BrokerCluster, run: String) {
    self.cluster = cluster
    heardKey = Self.heardPrefix + run
  }

  /// Every key's record, decoded (records that do not decode are left out), and whom the
  /// brokers heard from.
  func loadAll() throws -> (records: [String: StoredRecord], heard: [String: HeardRecord]) {
    var records: [String: StoredRecord] = [:]
    var heard: [String: HeardRecord] = [:]
    for (key, record) in try cluster.loadAll() {
      if key.hasPrefix(Self.heardPrefix) {
        heard[String(key.dropFirst(Self.heardPrefix.count))] = HeardRecord(decoding: record.data)
      } else if let stored = Self.decode(record) {
        records[key] = stored
      }
    }
    return (records, heard)
  }

  /// Deletes the record of whom the broker run `run` heard from: it stopped recording.
  func removeHeard(of run: String) {
    guard isAvailable else { return }
    cluster.remove(key: Self.heardPrefix + run)
  }

  /// Records in the store whom this broker heard from and when, for the other brokers.
  func recordHeard(_ record: HeardRecord) {
    guard isAvailable, let data = try? QuickJSONEncoder().encode(record) else { return }
    cluster.put(key: heardKey, record: data)
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
    var events: [BrokerMachine.StoreEvent] = []
    for event in cluster.takeEvents() {
      switch event {
      case .committed(let token, let result):
        events.append(.committed(token, Self.outcome(result)))
      case .changed(let changes, let followsHistory):
        var heard: [String: HeardRecord] = [:]
        var stored: [(key: String, stored: StoredRecord)] = []
        for change in changes {
          if change.key.hasPrefix(Self.heardPrefix) {
            if change.key != heardKey {
              heard[String(change.key.dropFirst(Self.heardPrefix.count))] =
                HeardRecord(decoding: change.record.data)
            }
          } else if followsHistory, unechoed[change.key] == change.record.data {
            unechoed[change.key] = nil
          } else if let decoded = Self.decode(change.record) {
            stored.append((change.key, decoded))
          }
        }
        if !heard.isEmpty { events.append(.heard(heard)) }
        if !stored.isEmpty { events.append(.watched(stored)) }
      case .availability(let available):
        isAvailable = available
        events.append(.available(available))
      case .members(let members):
        events.append(.members(members))
      }
    }
    return events
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
