import Foundation
internal import Logging
internal import Sharing
import Synchronization

/// The owner of a client's ``ClientMachine``: the I/O thread's ``ClientLoop`` (or the
/// simulation in the tests) feeds it ``ClientEvent``s, and it carries out the ``ClientAction``s
/// that come out, with a ``ClientTransport`` for what must reach the sockets. It alone touches
/// the machine, so the machine needs no lock: the user's threads reach it through the
/// ``ClientStorage``'s mailbox, taken at every turn.
///
/// It decodes and encodes values, re-applies pending mutations on a newer confirmed value
/// (installing the result in the key's ``KeySlot`` under the key's body lock, with the
/// mutations recorded meanwhile), and tells observers with no lock held.
final class ClientDriver {
  private(set) var machine: ClientMachine
  let storage: ClientStorage
  /// The keys' slots, as the machine knows them (refreshed with the mail that adds a key).
  private var slots: [KeySlot] = []
  /// The mail buffer, swapped with the storage's at every turn to reuse its storage.
  private var mail: [ClientMail] = []
  /// The actions being carried out and the keys whose observers to tell, kept between events
  /// to reuse their storage.
  private var buffers = Buffers()
  /// What was last published for waiters.
  private var published: (brokers: BrokerList, isHeldBack: Bool)

  init(machine: ClientMachine, storage: ClientStorage) {
    self.machine = machine
    self.storage = storage
    published = (machine.brokers, machine.isHeldBack)
  }

  /// When the machine next wants a turn.
  func deadline(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
    inPlace { $0.deadline(now: now) }
  }

  /// Whether a message from the PUB socket can be dropped undecoded: this client's own update,
  /// which its `ACK` settled already.
  func isSettledOwnUpdate(_ frames: FrameBuffer) -> Bool {
    inPlace { $0.isSettledOwnUpdate(frames) }
  }

  /// Feeds an event to the machine and carries out what it asks for, with `transport` for what
  /// reaches the sockets. A turn first takes the mail the user's threads posted.
  func handle(
    _ event: ClientEvent, at now: ContinuousClock.Instant, via transport: some ClientTransport
  ) {
    // Taken out for the call: as stored properties, each use would be checked for exclusive
    // access.
    var buffers = Buffers()
    swap(&buffers, &self.buffers)
    defer { swap(&buffers, &self.buffers) }
    if case .turn = event {
      if let slots = storage.takeMail(into: &mail) { self.slots = slots }
      if !mail.isEmpty {
        machine.handle(.mail(mail), at: now, into: &buffers.queue)
        perform(&buffers, at: now, via: transport)
        mail.removeAll(keepingCapacity: true)
      }
    }
    machine.handle(event, at: now, into: &buffers.queue)
    perform(&buffers, at: now, via: transport)
  }

  /// Carries out the actions in `buffers.queue`, and those they lead to, then empties it.
  private func perform(
    _ buffers: inout Buffers, at now: ContinuousClock.Instant,
    via transport: some ClientTransport
  ) {
    defer {
      buffers.queue.removeAll(keepingCapacity: true)
      buffers.notify.removeAll(keepingCapacity: true)
    }
    var progressed = false
    var sendFailed = false
    var next = 0
    while next < buffers.queue.count {
      let action = buffers.queue[next]
      next += 1
      switch action {
      case .send(let message):
        // Once per batch: the machine resyncs every key at the first.
        if !transport.send(message), !sendFailed {
          sendFailed = true
          machine.handle(.sendFailed, at: now, into: &buffers.queue)
        }
      case .subscribe(let key):
        transport.subscribe(to: key)
      case .connectDealer(let endpoint, let old):
        transport.connectDealer(to: endpoint, from: old)
      case .connectSubscriber(let endpoint, let old):
        if !transport.connectSubscriber(to: endpoint, from: old) {
          machine.handle(.subscriberUnreachable, at: now, into: &buffers.queue)
        }
      case .disconnectSubscriber(let endpoint):
        transport.disconnectSubscriber(from: endpoint)
      case .rebase(let index):
        rebase(index, into: &buffers.queue)
      case .encode(let request):
        let codec = slots[request.key].codec
        let data = Result { try codec.encode(request.value) }
        machine.encoded(request, data, at: now, into: &buffers.queue)
      case .notify(let index):
        if !buffers.notify.contains(index) { buffers.notify.append(index) }
      case .confirmed(let index, let through):
        slots[index].confirm(through: through)
      case .refused(let index, let sequences):
        slots[index].refuse(sequences)
      case .turn:
        machine.handle(.turn, at: now, into: &buffers.queue)
      case .connection(let connection):
        progressed = true
        storage.setState(connection)
      case .handshake(let failure):
        storage.handshakeFailed(failure)
      case .progressed:
        progressed = true
      case .brokerUnavailable(let endpoint):
        storage.brokerUnavailable(at: endpoint)
      case .log(let notice):
        log(notice)
      }
    }
    tellObservers(buffers.notify)
    let (brokers, isHeldBack) = inPlace { ($0.brokers, $0.isHeldBack) }
    if progressed || published.isHeldBack != isHeldBack || published.brokers != brokers {
      published = (brokers, isHeldBack)
      storage.publish(
        synced: inPlace { $0.syncedKeys() }, brokers: brokers, isHeldBack: isHeldBack)
      if progressed { storage.progress.signal() }
    }
  }

  /// Brings the key at `index` up to date: decodes the newest confirmed value and re-applies
  /// the pending mutations with no lock held, then, under the key's body lock, those recorded
  /// meanwhile, and installs the result in the key's slot. A mutation may read shared values
  /// (this key's shows the value before the rebase). What follows is appended to `queue`.
  private func rebase(_ index: Int, into queue: inout [ClientAction]) {
    guard let due = inPlace({ $0.rebaseDue(index) }) else { return }
    let slot = slots[index]
    let decoded = due.undecoded.map { data in Result { try slot.codec.decode(data) } }
    var value = (try? decoded?.get()) ?? due.confirmed
    var through = due.confirmedThrough
    var changed = false
    // Observers of keys a mutation brings up to date hear of it once the rebase is over.
    LockedRegion.run {
      for mutation in slot.pending(after: through) {
        mutation.apply(&value)
        through = mutation.sequence
      }
      slot.body.withLock {
        for mutation in slot.pending(after: through) {
          mutation.apply(&value)
          through = mutation.sequence
        }
        changed = slot.state.withLock { state in
          defer { state.value = value }
          return state.value != value
        }
      }
    }
    machine.rebased(due.result(decoded: decoded, local: value, through: through), into: &queue)
    // Observers were told of the slot's value, which the machine may not have heard of yet.
    if changed { queue.append(.notify(index)) }
  }

  /// Tells the observers of the keys at `indices` of their values and errors, read at once.
  private func tellObservers(_ indices: [Int]) {
    for index in indices {
      let observed = inPlace { $0.observed(index) }
      let told = slots[index].state.withLock { state in
        state.isLoading = observed.isLoading
        state.loadError = observed.loadError
        state.saveError = observed.saveError
        state.stamp += 1
        return KeySlot.Told(value: state.value, stamp: state.stamp, tell: state.tell)
      }
      told.deliver(onlyTheValue: false)
    }
  }

  /// Reads the machine in place. A call on the machine through this class's property would
  /// copy it whole first (every array and string in it retained and released), so that it
  /// stays the same during the call; an `inout` access needs no copy.
  private func inPlace<R>(_ body: (inout ClientMachine) -> R) -> R {
    body(&machine)
  }

  private func log(_ notice: ClientNotice) {
    let logger = storage.logger
    switch notice {
    case .brokerStoppedAnswering:
      logger.warning("Broker stopped answering")
    case .refused(let code, let message):
      logger.error(
        "The broker refused a request",
        metadata: ["code": "\(code.rawValue)", "message": "\(message)"])
    case .requestFromTheBroker:
      logger.warning("Ignored a request sent to a client")
    case .brokers(let brokers):
      logger.info(
        "The cluster's brokers", metadata: ["brokers": "\(brokers.joined(separator: ","))"])
    }
  }
}

/// A ``ClientDriver``'s lists for one event, emptied after it.
private struct Buffers {
  /// The machine's actions, carried out in order; those they lead to are appended.
  var queue: [ClientAction] = []
  /// The keys whose observers to tell once the actions are carried out.
  var notify: [Int] = []
}

/// What the ``ClientDriver`` needs of the sockets: the I/O thread's ``ClientLoop``, or the
/// simulation's network in the tests. It decides nothing: the machine says what to connect
/// where.
protocol ClientTransport {
  /// Sends a message to the broker's ROUTER; `false` when it was not queued (no connection, or
  /// the socket's high-water mark).
  func send(_ message: BrokerMessage) -> Bool
  /// Subscribes the SUB socket to a key's topic.
  func subscribe(to key: String)
  /// Disconnects the DEALER from `old` and connects it to `endpoint`.
  func connectDealer(to endpoint: String, from old: String)
  /// Connects the SUB socket to the publisher at `endpoint` (and disconnects it from `old`);
  /// `false` when it cannot (an endpoint libzmq refuses).
  func connectSubscriber(to endpoint: String, from old: String?) -> Bool
  /// Disconnects the SUB socket from the publisher at `endpoint`.
  func disconnectSubscriber(from endpoint: String)
}
