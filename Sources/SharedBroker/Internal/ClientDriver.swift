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
  let storage: ClientStorage
  /// Everything the driver changes, in one stored property that each call takes once: every
  /// access to a class's stored property is checked for exclusivity at run time, some 80
  /// instructions, and the machine, slots and buffers are used many times per event.
  private var state: State

  init(machine: ClientMachine, storage: ClientStorage) {
    self.storage = storage
    state = State(machine: machine, published: (machine.brokersRevision, machine.isHeldBack))
  }

  /// The machine, copied (for a look at its identity or brokers, not per event).
  var machine: ClientMachine { state.machine }

  /// When the machine next wants a turn.
  func deadline(now: Moment) -> Moment {
    withState { $0.machine.deadline(now: now) }
  }

  /// Whether a message from the PUB socket can be dropped undecoded: this client's own update,
  /// which an answer (a `REJECT`, a snapshot) settled already.
  func isSettledOwnUpdate(_ frames: FrameBuffer) -> Bool {
    withState { $0.machine.isSettledOwnUpdate(frames) }
  }

  /// Feeds an event to the machine and carries out what it asks for, with `transport` for what
  /// reaches the sockets. A turn first takes the mail the user's threads posted.
  func handle(
    _ event: ClientEvent, at now: Moment, via transport: some ClientTransport
  ) {
    withState { state in
      if case .turn = event {
        if let slots = storage.takeMail(into: &state.mail) { state.slots = slots }
        if !state.mail.isEmpty {
          state.machine.handle(.mail(state.mail), at: now, into: &state.queue)
          perform(&state, at: now, via: transport)
          state.mail.removeAll(keepingCapacity: true)
        }
      }
      state.machine.handle(event, at: now, into: &state.queue)
      perform(&state, at: now, via: transport)
    }
  }

  /// Carries out the actions in `state.queue`, and those they lead to, then empties it.
  private func perform(
    _ state: inout State, at now: Moment, via transport: some ClientTransport
  ) {
    defer {
      state.queue.removeAll(keepingCapacity: true)
      state.notify.removeAll(keepingCapacity: true)
    }
    var progressed = false
    var sendFailed = false
    var next = 0
    while next < state.queue.count {
      // Moved out, a plain case left in its place: a copy retained the action's payload, and
      // emptying the queue released it again.
      var action = ClientAction.turn
      swap(&action, &state.queue[next])
      next += 1
      switch consume action {
      case .send(let message):
        // Once per batch: the machine resyncs every key at the first.
        if !transport.send(message), !sendFailed {
          sendFailed = true
          state.machine.handle(.sendFailed, at: now, into: &state.queue)
        }
      case .subscribe(let key):
        transport.subscribe(to: key)
      case .connectDealer(let endpoint, let old):
        transport.connectDealer(to: endpoint, from: old)
      case .connectSubscriber(let endpoint, let old):
        if !transport.connectSubscriber(to: endpoint, from: old) {
          state.machine.handle(.subscriberUnreachable, at: now, into: &state.queue)
        }
      case .disconnectSubscriber(let endpoint):
        transport.disconnectSubscriber(from: endpoint)
      case .rebase(let index):
        rebase(index, &state)
      case .encode(let request):
        let codec = state.slots[request.key].codec
        let data = Result { try codec.encode(request.value) }
        state.machine.encoded(request, data, at: now, into: &state.queue)
      case .notify(let index):
        if !state.notify.contains(index) { state.notify.append(index) }
      case .confirmed(let index, let through):
        state.slots[index].confirm(through: through)
      case .refused(let index, let sequences):
        state.slots[index].refuse(sequences)
      case .turn:
        state.machine.handle(.turn, at: now, into: &state.queue)
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
    tellObservers(&state)
    let (revision, isHeldBack) = (state.machine.brokersRevision, state.machine.isHeldBack)
    if progressed || state.published.isHeldBack != isHeldBack
      || state.published.brokersRevision != revision
    {
      state.published = (revision, isHeldBack)
      storage.publish(
        synced: state.machine.syncedKeys(), brokers: state.machine.brokers,
        isHeldBack: isHeldBack)
      if progressed { storage.progress.signal() }
    }
  }

  /// Brings the key at `index` up to date: decodes the newest confirmed value and re-applies
  /// the pending mutations with no lock held, then, under the key's body lock, those recorded
  /// meanwhile, and installs the result in the key's slot. A mutation may read shared values
  /// (this key's shows the value before the rebase). What follows is appended to the queue.
  private func rebase(_ index: Int, _ state: inout State) {
    guard let due = state.machine.rebaseDue(index) else { return }
    let slot = state.slots[index]
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
    state.machine.rebased(
      due.result(decoded: decoded, local: value, through: through), into: &state.queue)
    // Observers were told of the slot's value, which the machine may not have heard of yet.
    if changed { state.queue.append(.notify(index)) }
  }

  /// Tells the observers of the keys in `state.notify` of their values and errors, read at once.
  private func tellObservers(_ state: inout State) {
    for index in state.notify {
      let observed = state.machine.observed(index)
      let told = state.slots[index].state.withLock { state in
        state.isLoading = observed.isLoading
        state.loadError = observed.loadError
        state.saveError = observed.saveError
        state.stamp += 1
        return KeySlot.Told(value: state.value, stamp: state.stamp, tell: state.tell)
      }
      told.deliver(onlyTheValue: false)
    }
  }

  /// Runs `body` on the state in place: one exclusivity check for the whole call. A method
  /// called on a class's stored property would also copy it whole first (every array and
  /// string in it retained and released) so that it stays the same during the call.
  private func withState<R>(_ body: (inout State) -> R) -> R {
    body(&state)
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

/// What a ``ClientDriver`` changes.
private struct State {
  var machine: ClientMachine
  /// The keys' slots, as the machine knows them (refreshed with the mail that adds a key).
  var slots: [KeySlot] = []
  /// The mail buffer, swapped with the storage's at every turn to reuse its storage.
  var mail: [ClientMail] = []
  /// The machine's actions for one event, carried out in order; those they lead to are
  /// appended. Emptied after each event, its storage kept.
  var queue: [ClientAction] = []
  /// The keys whose observers to tell once the actions are carried out (emptied likewise).
  var notify: [Int] = []
  /// What was last published for waiters (the brokers by their revision).
  var published: (brokersRevision: Int, isHeldBack: Bool)
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
