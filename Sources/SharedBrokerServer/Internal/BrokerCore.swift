import Foundation

/// The broker's serving loop without its sockets: it feeds the ``BrokerMachine`` a request, the
/// time or the store's events, and carries out the actions that come out (replies and
/// publications through a ``BrokerTransport``, commits to the log, which answers at once, or to
/// a cluster's store through the ``ClusterDriver``) until none is left. The broker's thread
/// drives it with ZeroMQ sockets; the simulation in the tests drives the same code with its own
/// network and etcd.
final class BrokerCore {
  /// Where the broker's keys are stored.
  enum Backend {
    case log(BrokerLog)
    case cluster(ClusterDriver)
  }

  private(set) var machine: BrokerMachine
  let backend: Backend
  private let transport: any BrokerTransport
  /// Hears the statistics whenever they may have changed, before anything goes out: whoever
  /// hears of a request may ask for them next.
  private let counted: (BrokerStatistics) -> Void
  /// Hears what is worth a log line.
  private let report: (BrokerMachine.Report) -> Void
  /// What only the sockets see, counted beside the machine's statistics.
  private var traffic = Traffic()

  private struct Traffic {
    var bytesReceived = 0
    var bytesSent = 0
    var answersDropped = 0
    var connections = 0
    var deniedClients = 0
    var rejectedConnections = 0
    var clientCapacity = 0
  }

  init(
    machine: BrokerMachine, backend: Backend, transport: any BrokerTransport,
    counted: @escaping (BrokerStatistics) -> Void,
    report: @escaping (BrokerMachine.Report) -> Void
  ) {
    self.machine = machine
    self.backend = backend
    self.transport = transport
    self.counted = counted
    self.report = report
    counted(statistics)
  }

  /// The machine's statistics with what the sockets saw.
  var statistics: BrokerStatistics {
    var statistics = machine.statistics
    statistics.bytesReceived = traffic.bytesReceived
    statistics.bytesSent = traffic.bytesSent
    statistics.answersDropped = traffic.answersDropped
    statistics.connections = traffic.connections
    statistics.deniedClients = traffic.deniedClients
    statistics.rejectedConnections = traffic.rejectedConnections
    statistics.clientCapacity = traffic.clientCapacity
    return statistics
  }

  /// Handles one request (`frames` without the ROUTER identity) from the connection `peer`,
  /// whose CURVE public key is `clientKey` (`nil` without CURVE).
  func receive(
    _ frames: FrameBuffer, from peer: Data, clientKey: String? = nil, at now: Duration
  ) {
    traffic.bytesReceived += frames.byteCount
    perform(machine.receive(frames, from: peer, clientKey: clientKey, at: now))
  }

  /// Takes a new allow-list: its rules hold from the next request on.
  func setAllowList(_ allowList: AllowList) {
    machine.setAllowList(allowList)
  }

  /// The time passed: silent clients are forgotten, unanswered commits sent again.
  func tick(at now: Duration) {
    let actions = machine.tick(at: now)
    guard !actions.isEmpty else { return }
    perform(actions)
  }

  /// Takes what the cluster's store said since the last call, in its order; each event's
  /// answers go out before the next is taken.
  func takeStoreEvents() {
    guard case .cluster(let driver) = backend else { return }
    for event in driver.takeEvents() {
      switch event {
      case .committed(let token, let outcome):
        perform(machine.committed(token, outcome))
      case .watched(let changes):
        perform(machine.watched(changes))
      case .available(let available):
        machine.setAvailable(available)
        counted(statistics)
      case .heard(let records):
        machine.heard(records)
      case .members(let members):
        perform(machine.setMembers(members))
      }
    }
  }

  /// Counts a connection the ROUTER took in (`true`) or lost.
  func connection(opened: Bool) {
    traffic.connections += opened ? 1 : -1
    counted(statistics)
  }

  /// Counts connections shut down at once because the broker holds as many clients as it can.
  func rejectedConnections(_ count: Int, capacity: Int) {
    traffic.rejectedConnections = count
    traffic.clientCapacity = capacity
    counted(statistics)
  }

  /// Counts a connection refused by the CURVE allow-list.
  func deniedClient() {
    traffic.deniedClients += 1
    counted(statistics)
  }

  /// Carries out the actions, and those that the log's answers make.
  private func perform(_ actions: [BrokerMachine.Action]) {
    counted(statistics)
    var actions = actions
    var next = 0
    while next < actions.count {
      let action = actions[next]
      next += 1
      switch action {
      case .reply(let peer, let message):
        if let bytes = transport.reply(message, to: peer) {
          traffic.bytesSent += bytes
        } else {
          traffic.answersDropped += 1
        }
      case .publish(let message):
        if let bytes = transport.publish(message) { traffic.bytesSent += bytes }
      case .commit(let commit):
        let outcome: BrokerMachine.CommitOutcome
        switch backend {
        case .log(let log): outcome = log.commit(commit)
        case .cluster(let driver):
          guard let answered = driver.commit(commit) else { continue }
          outcome = answered
        }
        let answers = machine.committed(commit.token, outcome)
        // A batch's commit is mostly the last action: its answers replace the list rather
        // than being copied onto its end.
        if next == actions.count {
          actions = answers
          next = 0
        } else {
          actions += answers
        }
        // Counted before the answers go out.
        counted(statistics)
      case .report(let report):
        self.report(report)
      case .recordHeard(let record):
        if case .cluster(let driver) = backend { driver.recordHeard(record) }
      case .removeHeard(let run):
        if case .cluster(let driver) = backend { driver.removeHeard(of: run) }
      }
    }
  }
}

/// What the ``BrokerCore`` needs of the sockets: the broker thread's ROUTER and PUB, or the
/// simulation's network in the tests.
protocol BrokerTransport {
  /// Sends a reply to the connection `peer`: the bytes of its frames, or `nil` when it could not
  /// be queued.
  func reply(_ message: BrokerMessage, to peer: Data) -> Int?
  /// Publishes a message to the subscribers of its topic: the bytes of its frames, or `nil` when
  /// it could not be queued.
  func publish(_ message: BrokerMessage) -> Int?
}

extension Collection<Data> {
  /// The bytes of a message's frames.
  var byteCount: Int { reduce(0) { $0 + $1.count } }
}
