import Foundation

@testable import SharedBroker

/// One run of a simulated broker: the real machine, whose log (for a single broker) answers its
/// commits at once, as the broker's thread does. A broker of a cluster hands its commits to
/// the simulation, which carries them to the simulated etcd and brings the answers back.
final class SimulatedBroker {
  private var machine: BrokerMachine
  private let log: BrokerLog?
  private var actions: [BrokerMachine.Action] = []
  /// Which run of its slot this is: answers meant for an earlier run are not delivered.
  let run: Int
  /// Where this broker's watch of the cluster resumes.
  var watchNext: Int64 = 1
  /// Whether a tick is scheduled.
  var tickScheduled = false
  /// Each key's record last sent to be stored, until the watch brings it back.
  private var unechoed: [String: ClusterRecord] = [:]

  /// A single broker.
  ///
  /// - Parameter directory: The data directory, or `nil` for a broker in memory.
  init(instance: String, directory: URL?, configuration: BrokerConfiguration, run: Int) throws {
    let log = try BrokerLog(directory: directory)
    self.log = log
    self.run = run
    machine = BrokerMachine(
      instance: instance, run: instance, backend: .log, configuration: configuration,
      publisherEndpoint: "inproc://simulated-publisher", entries: log.loaded, now: .zero)
  }

  /// A broker of the cluster whose store is `etcd`, starting from what it holds now, at
  /// `startedAt` (in milliseconds of the world's clock, which every broker shares).
  init(
    cluster etcd: SimulatedEtcd, configuration: BrokerConfiguration, run: Int, name: String,
    startedAt: Int64
  ) {
    log = nil
    self.run = run
    watchNext = etcd.revision + 1
    machine = BrokerMachine(
      instance: etcd.instance, run: name, backend: .cluster, configuration: configuration,
      publisherEndpoint: "inproc://simulated-publisher", records: etcd.records, now: .zero,
      startedAt: startedAt)
  }

  var instance: String { machine.instance }
  var entries: [String: BrokerEntry] { machine.entries }
  /// Whether a commit waits to be sent again at a tick.
  var hasRetries: Bool { !machine.retries.isEmpty }
  /// Whether no commit is out or waits to be sent again.
  var isIdle: Bool { machine.flights.isEmpty && machine.retries.isEmpty }

  /// What one request makes the broker send, in order: replies, publications and commits.
  func receive(_ frames: [Data], from peer: Data, at now: Duration) -> [BrokerMachine.Action] {
    machine.receive(frames, from: peer, at: now, into: &actions)
    return carryOut()
  }

  /// What a commit's outcome makes the broker send.
  func committed(_ token: UInt64, _ outcome: BrokerMachine.CommitOutcome) -> [BrokerMachine.Action]
  {
    machine.committed(token, outcome, into: &actions)
    return carryOut()
  }

  /// What the watch's changes make the broker send. As etcd's store and the cluster driver do,
  /// its own commits, echoed, are left out: by their record when the watch follows the history
  /// (`leavingOutEchoes`), then by their revision.
  func watched(
    _ changes: [(key: String, stored: StoredRecord)], leavingOutEchoes: Bool
  ) -> [BrokerMachine.Action] {
    let changes = changes.filter { change in
      if leavingOutEchoes, unechoed[change.key] == change.stored.record {
        unechoed[change.key] = nil
        return false
      }
      return change.stored.revision > machine.revision(of: change.key)
    }
    machine.watched(changes, into: &actions)
    return carryOut()
  }

  /// What the time makes the broker send.
  func tick(at now: Duration) -> [BrokerMachine.Action] {
    machine.tick(at: now, into: &actions)
    return carryOut()
  }

  func setAvailable(_ available: Bool) {
    machine.setAvailable(available)
  }

  private func carryOut() -> [BrokerMachine.Action] {
    var sent: [BrokerMachine.Action] = []
    var next = 0
    while next < actions.count {
      let action = actions[next]
      next += 1
      switch action {
      case .reply, .publish:
        sent.append(action)
      case .commit(let commit):
        guard let log else {
          if let record = commit.record { unechoed[commit.key] = record }
          sent.append(action)
          continue
        }
        machine.committed(commit.token, log.commit(commit), into: &actions)
      case .report:
        break
      }
    }
    actions.removeAll(keepingCapacity: true)
    return sent
  }
}
