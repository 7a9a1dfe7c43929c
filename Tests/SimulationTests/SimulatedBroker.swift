import Foundation

@testable import SharedBroker

/// One run of the simulated broker: the real machine, whose log answers its commits at once, as
/// the broker's thread does.
final class SimulatedBroker {
  private var machine: BrokerMachine
  private let log: BrokerLog
  private var actions: [BrokerMachine.Action] = []

  /// - Parameter directory: The data directory, or `nil` for a broker in memory.
  init(instance: String, directory: URL?, configuration: BrokerConfiguration) throws {
    log = try BrokerLog(directory: directory)
    machine = BrokerMachine(
      instance: instance, run: instance, backend: .log, configuration: configuration,
      publisherEndpoint: "inproc://simulated-publisher", entries: log.loaded, now: .zero)
  }

  var instance: String { machine.instance }
  var entries: [String: BrokerEntry] { machine.entries }

  /// What one request makes the broker send, in order: replies and publications.
  func receive(_ frames: [Data], from peer: Data, at now: Duration) -> [BrokerMachine.Action] {
    machine.receive(frames, from: peer, at: now, into: &actions)
    var sent: [BrokerMachine.Action] = []
    var next = 0
    while next < actions.count {
      let action = actions[next]
      next += 1
      switch action {
      case .reply, .publish:
        sent.append(action)
      case .commit(let commit):
        machine.committed(commit.token, log.commit(commit), into: &actions)
      case .report:
        break
      }
    }
    actions.removeAll(keepingCapacity: true)
    return sent
  }
}
