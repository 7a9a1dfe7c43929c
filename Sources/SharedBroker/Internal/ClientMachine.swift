import Foundation
internal import ZeroMQ

/// A client of the broker as one value: the connection (the handshake `HELLO`/`WELCOME`,
/// heartbeats `PING`/`PONG`, which broker run it talks to, which broker of a cluster its DEALER
/// and SUB connect to and when they move) and every key's ``KeyMachine``. It has
/// no sockets, clocks, locks, closures or logger: each event goes in with the time, and the
/// ``ClientAction``s that come out are carried out by its owner, the ``ClientDriver`` on the
/// client's I/O thread. The deterministic simulation in the tests drives the same driver and
/// machine.
///
/// Liveness comes from the connection and from heartbeats. A connection that drops (the broker's
/// process ended) is reported at once; a broker that stops answering without dropping it (a
/// frozen process, a lost network) counts as lost after `missedHeartbeats` intervals without any
/// answer. Either way every key waits, and every mutation stays pending until the broker answers
/// again. A broker that answers as another run (`PONG` with another instance, or
/// `ERROR hello`) gets a new `HELLO`, after which every key resyncs from the start.
///
/// The user's threads never touch it: what they do (a key added, a mutation recorded, a reload)
/// reaches it as ``ClientMail`` from the ``ClientStorage``'s mailbox, at the I/O thread's next
/// turn.
struct ClientMachine {
  /// The first retry of HELLO and of a key's SYNC. On loopback a new connection, or a
  /// subscription, is usually in effect within a millisecond or two, so the retries start short
  /// and double up to ``retryInterval``.
  static var firstRetry: Duration { .microseconds(250) }

  /// The longest wait between retries (of HELLO, and of a key's questions and refused writes),
  /// or the heartbeat if it is shorter: heartbeats are spaced for the broker's load, retries for
  /// how soon work resumes.
  static var longestRetry: Duration { .milliseconds(500) }

  /// This client's id.
  let id: String
  /// `id` as a frame, to recognize this client's own updates by comparing bytes.
  private let idFrame: Data
  private let heartbeat: Duration
  private let retryInterval: Duration
  /// How long a broker may stay silent before the client counts it as lost.
  private let silenceLimit: Duration
  /// How long the client waits for a `WELCOME` before it moves to another broker.
  private let moveLimit: Duration
  private let maxWritesInFlight: Int

  /// The brokers to move among, and the one the DEALER connects to.
  private(set) var brokers: BrokerList {
    didSet { brokersRevision &+= 1 }
  }
  /// Counts the changes to `brokers`, so that the driver, which republishes the list when it
  /// changes, compares a number after each event instead of copying and comparing the list.
  private(set) var brokersRevision = 0
  /// The publisher the SUB connects to, as the last `WELCOME` named it.
  private(set) var publisher: String?
  /// The DEALER's handshakes, which tell a refused or mismatched key from a broker away.
  private var handshakes: HandshakeHistory

  /// In the order the keys were added, so the same events make the same messages (the
  /// simulation replays a seed exactly).
  private(set) var keys: [KeyMachine] = []
  private var indices: [String: Int] = [:]
  private(set) var connection = Connection.handshaking(instance: nil)
  /// The largest value the broker accepts, as its WELCOME said. A bigger one is not sent: past
  /// its transport limit the broker's libzmq would drop the connection without a reply, and the
  /// write would wait for an answer that never comes.
  private var maxValueSize: UInt64?
  private var lastHeard: Moment
  private var lastPing: Moment
  /// While not connected, HELLO is retried quickly at first, then at the retry interval.
  private var helloBackoff = ClientMachine.firstRetry
  /// When the connection was lost, or the client last asked to move to another broker: after as
  /// long again without a `WELCOME`, it asks to move on.
  private var lastMove: Moment
  private var nextWriteID: UInt64 = 1
  /// Keys the last PONG said the broker holds at another version, checked at the next tick,
  /// once the updates read meanwhile are applied.
  private var behind: [KeyVersion] = []
  /// When each key next wants a tick, as its last event said: the loop asks on every turn, and
  /// a key's deadline changes only with its events.
  private var deadlines: [Moment?] = []
  /// The broker answered `seeding` (it collects its clients' copies for a while after it
  /// starts, holding back writes, and reads of keys it has no value for) and has answered no
  /// read or write of this client's since (an applied write is answered by its update).
  private(set) var isHeldBack = false
  /// The broker refused this client as a whole (its key off the allow-list, its client id
  /// another key's, or its protocol version one the broker does not speak): the client counts
  /// as refused until the broker answers otherwise.
  private var refused = false

  /// Where the connection stands.
  enum Connection: Equatable {
    /// Not `WELCOME`d (yet, or again: the broker stopped answering, or answered as another
    /// run). `instance`: the run the DEALER last talked to, until its connection is lost.
    case handshaking(instance: String?)
    /// `WELCOME`d by the broker run `instance`.
    case connected(instance: String)
    /// `WELCOME`d, but the DEALER's connection dropped since: the next one may reach another
    /// run, whose versions mean something else, so nothing is taken for the old one until a
    /// `WELCOME` says which run answers.
    case dropped
  }

  init(
    id: String, brokers: BrokerList, usesCurve: Bool = false, heartbeat: Duration,
    missedHeartbeats: Int, maxWritesInFlight: Int, now: Moment
  ) {
    self.id = id
    idFrame = Frames.text(id)
    self.brokers = brokers
    handshakes = HandshakeHistory(usesCurve: usesCurve)
    self.heartbeat = heartbeat
    retryInterval = min(heartbeat, Self.longestRetry)
    // Once: multiplying a `Duration` goes through 128-bit arithmetic, some 500 instructions,
    // and every turn compares with these.
    silenceLimit = heartbeat * missedHeartbeats
    moveLimit = retryInterval * missedHeartbeats
    self.maxWritesInFlight = maxWritesInFlight
    lastHeard = now
    lastMove = now
    lastPing = now - .seconds(3600)
  }

  /// `WELCOME`d, and not lost since (the DEALER's connection may have dropped).
  var isConnected: Bool {
    if case .handshaking = connection { false } else { true }
  }

  /// `WELCOME`d, on a connection that has not dropped since.
  private var isWelcomed: Bool {
    if case .connected = connection { true } else { false }
  }

  /// The broker run the connection talks to, while known.
  var brokerInstance: String? {
    switch connection {
    case .connected(let instance): instance
    case .handshaking(let instance): instance
    case .dropped: nil
    }
  }

  private var pingInterval: Duration { isConnected ? heartbeat : min(helloBackoff, retryInterval) }

  /// When the next ``ClientEvent/turn`` is due.
  func deadline(now: Moment) -> Moment {
    var deadline = lastPing + pingInterval
    if case .connected = connection {
      for case let due? in deadlines { deadline = min(deadline, due) }
    }
    return max(deadline, now)
  }

  /// The index of `key`, if the client mirrors it.
  func index(of key: String) -> Int? { indices[key] }

  // MARK: - Mail from other threads

  /// Starts mirroring `key` at `index` from `initialValue` (or starts it over, for a key
  /// re-declared with another value type: a new `epoch`).
  private mutating func add(
    key: String, index: Int, epoch: UInt64, initialValue: KeyValue,
    at now: Moment, _ actions: inout Actions
  ) {
    let machine = KeyMachine(
      key: key, index: index, epoch: epoch, clientID: id, initialValue: initialValue,
      retryInterval: retryInterval, maxWritesInFlight: maxWritesInFlight)
    if index == keys.count {
      indices[key] = index
      keys.append(machine)
      deadlines.append(nil)
      actions.append(.subscribe(key))
    } else {
      keys[index] = machine
      deadlines[index] = nil
    }
    if isConnected {
      handle(index, .connected(at: now), &actions)
    }
  }

  // The queries below are `mutating` only to read the key in place (see `withKey`).

  /// What observers of the key at `index` hear besides its value: whether it is still loading,
  /// and its errors.
  mutating func observed(_ index: Int)
    -> (isLoading: Bool, loadError: (any Error)?, saveError: (any Error)?)
  {
    withKey(index) { key in (!key.hasSnapshot, key.loadError, key.saveError) }
  }

  /// Which keys are in sync with the broker, by index.
  mutating func syncedKeys() -> [Bool] {
    keys.indices.map { index in withKey(index) { $0.isSynced } }
  }

  /// Whether a message from the PUB socket is this client's own update that changes nothing
  /// (see ``KeyMachine/isSettledOwnUpdate(version:write:)``), which its I/O thread drops
  /// undecoded: a writer gets every one of its writes back from the broker.
  mutating func isSettledOwnUpdate(_ frames: FrameBuffer) -> Bool {
    guard let update = BrokerMessage.update(frames, writtenBy: idFrame),
      let index = indices[update.key]
    else { return false }
    return withKey(index) { $0.isSettledOwnUpdate(version: update.version, write: update.write) }
  }

  /// What bringing the key at `index` up to date needs, if anything.
  mutating func rebaseDue(_ index: Int) -> KeyMachine.Rebase? {
    withKey(index) { $0.rebaseDue() }
  }

  /// Reads the key at `index` in place: a method called on `keys[index]` works on a copy of
  /// the whole key machine (its arrays, strings and values retained, then released), some 600
  /// instructions with an allocation, several times per update; an `inout` access makes none.
  private mutating func withKey<R>(_ index: Int, _ body: (inout KeyMachine) -> R) -> R {
    body(&keys[index])
  }

  /// Takes a rebase's result (``KeyEvent/rebased(_:)``), which the key's slot shows already:
  /// whom to tell, and another turn when writes may go out now, appended to `list`.
  mutating func rebased(_ result: KeyMachine.Rebased, into list: inout [ClientAction]) {
    let index = result.key
    Actions.appending(to: &list) { actions in
      handle(index, .rebased(result), &actions)
      if isConnected, keys[index].hasUnconfirmedWrites { actions.append(.turn) }
    }
  }

  // MARK: - Events of the I/O thread

  /// Feeds an event of the I/O thread; appends what to do, in order, to `list`.
  mutating func handle(
    _ event: ClientEvent, at now: Moment, into list: inout [ClientAction]
  ) {
    Actions.appending(to: &list) { actions in
      switch event {
      case .mail(let mail):
        take(mail, at: now, &actions)
      case .turn:
        turn(at: now, &actions)
      case .reply(let reply):
        receive(reply: reply, at: now, &actions)
      case .published(let messages):
        for message in messages { receive(published: message, at: now, &actions) }
      case .dealer(let event):
        dealer(event, at: now, &actions)
      case .sendFailed:
        // A message the DEALER did not queue (no connection, or its high-water mark) is lost as
        // with a broken connection: the keys resync, and the snapshots' lastWrite says which
        // writes in flight the broker has.
        connectionLost(&actions)
      case .subscriberUnreachable:
        // The WELCOME is not taken: the next heartbeat finds the run again and says HELLO.
        publisher = nil
        connectionLost(&actions)
      }
    }
  }

  /// An event of the DEALER's connection, as its socket monitor tells it.
  private mutating func dealer(
    _ event: SocketMonitor.Event, at now: Moment, _ actions: inout Actions
  ) {
    // After a move, the old broker's connection closing is no news.
    if event.kind == .disconnected, brokers.hasOthers, event.endpoint != brokers.current { return }
    let known = handshakes.problem
    handshakes.record(event)
    switch event.kind {
    case .disconnected:
      // The broker went away, and the next connection may reach another run of it, whose
      // versions mean something else. Until its WELCOME says which run it is, nothing from
      // either socket is taken for the run this client knew (the SUB may reconnect first).
      connectionLost(&actions)
      // Another broker of the cluster can take over at once.
      move(at: now, &actions)
    case .handshakeSucceeded:
      actions.append(.handshake(nil))
      // The DEALER drops what is sent before its connection is up, so the first HELLO was
      // probably lost: it is said again now rather than at the next retry. After a drop the
      // new connection may reach another run: its WELCOME says which, without waiting for the
      // next heartbeat to find out.
      if !isWelcomed {
        helloBackoff = Self.firstRetry
        actions.append(.send(.hello(client: id)))
        lastPing = now
      }
    default:
      break
    }
    // A failed handshake is otherwise invisible (libzmq retries quietly): it becomes the reason
    // a wait for the broker fails.
    if let problem = handshakes.problem, problem != known {
      actions.append(
        .handshake(.init(reason: Self.reason(problem), isPermanent: problem.isPermanent)))
    }
  }

  /// A handshake's problem, with what to do about it.
  private static func reason(_ problem: HandshakeHistory.Problem) -> String {
    switch problem {
    case .curveRequired:
      "\(problem): give this client the broker's public key and a key pair"
    case .closed(_, usesCurve: false):
      "\(problem): if it requires CURVE, give this client the broker's public key and a key "
        + "pair; if its log says \"At capacity\", raise its open-file limit or wait for clients "
        + "to leave"
    case .curveNotUsed: "\(problem): connect without CURVE keys"
    default: "\(problem)"
    }
  }

  /// Connects the DEALER to the next broker of the list (if it knows another), and the SUB
  /// to nothing until that broker's `WELCOME` names its publisher. Nothing is taken for the
  /// old broker, answers to what was asked there never come, and the handshake starts over at
  /// once.
  private mutating func move(at now: Moment, _ actions: inout Actions) {
    let old = brokers.current
    guard brokers.moveToNext() else { return }
    actions.append(.connectDealer(to: brokers.current, from: old))
    if let publisher {
      actions.append(.disconnectSubscriber(from: publisher))
      self.publisher = nil
    }
    connectionLost(&actions)
    if isConnected { connection = .handshaking(instance: nil) }
    helloBackoff = Self.firstRetry
    lastMove = now
    lastPing = now
    actions.append(.send(.hello(client: id)))
  }

  /// Takes the encoding of a write that ``ClientAction/encode(_:)`` asked for: the write, if it
  /// still applies, appended to `list`.
  mutating func encoded(
    _ request: KeyMachine.Encode, _ data: Result<Data, any Error>,
    at now: Moment, into list: inout [ClientAction]
  ) {
    let output = Actions.appending(to: &list) { actions in
      handle(request.key, .encoded(request, data, at: now, maxValueSize: maxValueSize), &actions)
    }
    if output.usedID, request.id == nextWriteID { nextWriteID += 1 }
  }

  /// Takes what the user's threads did, in the order they did it.
  private mutating func take(
    _ mail: [ClientMail], at now: Moment, _ actions: inout Actions
  ) {
    var added = false
    for item in mail {
      switch item {
      case .added(let index, let epoch, let key, let initialValue):
        add(key: key, index: index, epoch: epoch, initialValue: initialValue, at: now, &actions)
        added = true
      case .mutated(let index, let epoch, let sequence, let value):
        guard index < keys.count, keys[index].epoch == epoch else { continue }
        handle(index, .mutated(sequence: sequence, value: value), &actions)
      case .reload(let index, let epoch):
        guard index < keys.count, keys[index].epoch == epoch else { continue }
        handle(index, .reload(at: now, instance: isWelcomed ? brokerInstance : nil), &actions)
      }
    }
    // A new key is not in sync yet.
    if added { reportState(&actions) }
  }

  /// Runs heartbeats, timers and the writes that may go out.
  private mutating func turn(at now: Moment, _ actions: inout Actions) {
    tick(at: now, &actions)
    for index in keys.indices where keys[index].needsRebase {
      actions.append(.rebase(index))
    }
    flush(at: now, &actions)
  }

  /// Heartbeats, retries, and the keys' own timers.
  private mutating func tick(at now: Moment, _ actions: inout Actions) {
    if !behind.isEmpty, let instance = brokerInstance {
      for held in behind {
        guard let index = indices[held.key] else { continue }
        handle(index, .brokerHolds(version: held.version, at: now, instance: instance), &actions)
      }
      behind = []
    }
    if isConnected, now - lastHeard > silenceLimit {
      actions.append(.log(.brokerStoppedAnswering))
      lose(at: now, &actions)
    } else if !isConnected, now - lastMove > moveLimit {
      // No broker of the list has answered for as long: try the next one.
      lastMove = now
      move(at: now, &actions)
    }
    if now - lastPing >= pingInterval {
      if isConnected {
        let held = keys.compactMap { key in
          key.heldVersion.map { KeyVersion(key: key.key, version: $0) }
        }
        actions.append(.send(.ping(versions: held)))
      } else {
        actions.append(.send(.hello(client: id)))
        helloBackoff = min(helloBackoff * 2, retryInterval)
      }
      lastPing = now
    }
    guard case .connected(let instance) = connection else { return }
    for (index, deadline) in deadlines.enumerated() where deadline.map({ now >= $0 }) ?? false {
      handle(index, .tick(at: now, instance: instance), &actions)
    }
  }

  /// Asks for the encoding of the writes that may go out.
  private mutating func flush(at now: Moment, _ actions: inout Actions) {
    guard isConnected else { return }
    for index in keys.indices where keys[index].hasUnconfirmedWrites {
      // Taken now so that another key's write gets another id; an encoding that no longer
      // applies leaves a gap, which the broker does not mind (ids only need to grow).
      if handle(index, .flush(id: nextWriteID, at: now), &actions).encodes {
        nextWriteID += 1
      }
    }
  }

  // MARK: - Messages

  private static func isError(_ message: BrokerMessage) -> Bool {
    if case .error = message { true } else { false }
  }

  /// A reply on the DEALER.
  private mutating func receive(
    reply: BrokerMessage, at now: Moment, _ actions: inout Actions
  ) {
    lastHeard = now
    if refused, !Self.isError(reply) {
      refused = false
      actions.append(.handshake(nil))
      reportState(&actions)
    }
    switch reply {
    case .welcome(let instance, let announced, let maxValueSize, let cluster, _):
      self.maxValueSize = maxValueSize
      if !cluster.isEmpty { learn(cluster, &actions) }
      // The subscription follows the publisher each WELCOME names.
      let publisher = BrokerMessage.publisherEndpoint(announced: announced, router: brokers.current)
      if publisher != self.publisher {
        actions.append(.connectSubscriber(to: publisher, from: self.publisher))
        self.publisher = publisher
      }
      guard connection != .connected(instance: instance) else { return }
      connection = .connected(instance: instance)
      for index in keys.indices { handle(index, .connected(at: now), &actions) }
      reportState(&actions)
    case .pong(let instance, let behind):
      if connection != .connected(instance: instance) {
        // A restarted broker: start over with HELLO (its WELCOME names its publisher).
        helloAgain(at: now, &actions)
      } else {
        self.behind = behind
      }
    case .snapshot(let key, _, _, _, _):
      isHeldBack = false
      route(reply, to: key, at: now, &actions)
      reportState(&actions)
    case .ack(let key, _, _), .reject(let key, _, _, _, _, _):
      isHeldBack = false
      guard isConnected else { return }
      route(reply, to: key, at: now, &actions)
    case .error(.unavailable, _, _, _):
      // The broker cannot reach its cluster's store: another broker of the cluster can.
      actions.append(.brokerUnavailable(brokers.current))
      if isConnected {
        lose(at: now, &actions)
      } else if now - lastMove >= retryInterval {
        lastMove = now
        move(at: now, &actions)
      }
    case .error(.helloFirst, _, _, _):
      // The connection is new to the broker (it restarted, or the connection was re-made): the
      // request was not handled. Handshake again; the keys resync and the writes go out again.
      helloAgain(at: now, &actions)
    case .error(let code, let message, nil, _) where code == .forbidden || code == .version:
      // Not about a key: only the operator can change it. The heartbeats go on, and the
      // broker's next answer that is not a refusal lifts it (a reload put the key back, or the
      // broker was upgraded).
      guard !refused else { return }
      refused = true
      let reason =
        code == .forbidden
        ? "the broker refused this client's key: \(message)"
        : "the broker does not speak this client's protocol (\(message)): run a broker of "
          + "this release or newer"
      actions.append(.handshake(.init(reason: reason, isPermanent: true)))
    case .error(let code, let message, let key, _):
      if code == .seeding {
        isHeldBack = true
      } else {
        actions.append(.log(.refused(code, message)))
      }
      guard isConnected, let key else { return }
      route(reply, to: key, at: now, &actions)
    case .hello, .ping, .sync, .get, .seed, .write, .update, .synced, .brokers:
      actions.append(.log(.requestFromTheBroker))
    }
  }

  /// A message from the PUB socket. Updates only record their bytes: the rebase that decodes
  /// them is asked for once per batch.
  private mutating func receive(
    published message: BrokerMessage, at now: Moment, _ actions: inout Actions
  ) {
    switch message {
    case .update(let key, _, let writer, _, _):
      if writer == id { isHeldBack = false }
      route(message, to: key, at: now, &actions)
    case .synced(let key, _):
      route(message, to: key, at: now, &actions)
    case .brokers(let cluster):
      learn(cluster, &actions)
    default:
      break
    }
  }

  private mutating func route(
    _ message: BrokerMessage, to key: String, at now: Moment,
    _ actions: inout Actions
  ) {
    guard let index = indices[key] else { return }
    handle(index, .received(message, at: now, instance: brokerInstance), &actions)
  }

  /// Feeds the key at `index` and keeps what it asks for.
  @discardableResult
  private mutating func handle(
    _ index: Int, _ event: consuming KeyEvent, _ actions: inout Actions
  ) -> KeyOutput {
    let confirmed = keys[index].confirmedThrough
    let output = keys[index].handle(consume event)
    deadlines[index] = output.deadline
    // Refused mutations leave the pending ones as refused, before the rest go as confirmed.
    if let refused = output.refused { actions.append(.refused(key: index, sequences: refused)) }
    if keys[index].confirmedThrough != confirmed {
      actions.append(.confirmed(key: index, through: keys[index].confirmedThrough))
    }
    if output.changed { actions.append(.notify(index)) }
    if output.rebase { actions.append(.rebase(index)) }
    if let message = output.send { actions.append(.send(message)) }
    if let request = output.encode { actions.append(.encode(request)) }
    if output.progressed { actions.append(.progressed) }
    return output
  }

  /// The DEALER's connection was lost (it may come back to another broker run).
  private mutating func connectionLost(_ actions: inout Actions) {
    if isWelcomed { actions.append(.connection(.disconnected)) }
    connection = isConnected ? .dropped : .handshaking(instance: nil)
    isHeldBack = false
    for index in keys.indices { handle(index, .connectionLost, &actions) }
  }

  /// The broker is lost: every key waits, with its mutations pending, and the client moves to
  /// the next broker, if it has several.
  private mutating func lose(at now: Moment, _ actions: inout Actions) {
    connection = .handshaking(instance: brokerInstance)
    isHeldBack = false
    for index in keys.indices { handle(index, .disconnected, &actions) }
    helloBackoff = Self.firstRetry
    actions.append(.connection(.disconnected))
    lastMove = now
    move(at: now, &actions)
  }

  /// Takes the brokers the cluster announced as the ones to move among, besides those given.
  private mutating func learn(_ cluster: [String], _ actions: inout Actions) {
    if brokers.learn(cluster) { actions.append(.log(.brokers(brokers.all))) }
  }

  /// Starts the handshake over, as after a lost connection.
  private mutating func helloAgain(at now: Moment, _ actions: inout Actions) {
    connection = .handshaking(instance: brokerInstance)
    isHeldBack = false
    helloBackoff = Self.firstRetry
    actions.append(.send(.hello(client: id)))
    lastPing = now
  }

  /// Reports the connection's state, while connected: syncing until every key is in sync.
  private func reportState(_ actions: inout Actions) {
    guard isWelcomed else { return }
    actions.append(.connection(keys.allSatisfy(\.isSynced) ? .connected : .syncing))
    actions.append(.progressed)
  }
}

/// What the user's threads did, as the I/O thread's ``ClientMachine`` hears of it.
enum ClientMail: Equatable {
  /// A key is mirrored from now on, at `index` (again, with another value type: a new `epoch`).
  case added(index: Int, epoch: UInt64, key: String, initialValue: KeyValue)
  /// The key's mutation `sequence` made `value` its local value.
  case mutated(index: Int, epoch: UInt64, sequence: UInt64, value: KeyValue)
  /// A fresh snapshot of the key was asked for.
  case reload(index: Int, epoch: UInt64)
}

/// What happens to a ``ClientMachine`` on its I/O thread.
enum ClientEvent: Equatable {
  /// What the user's threads did since the last turn, in order.
  case mail([ClientMail])
  /// The I/O thread's turn (after every wake-up): heartbeats, timers, and the writes that may
  /// go out.
  case turn
  /// A reply on the DEALER.
  case reply(BrokerMessage)
  /// The messages the SUB socket had waiting, in order.
  case published([BrokerMessage])
  /// The DEALER's socket monitor told of its connections: made, dropped, a handshake.
  case dealer(SocketMonitor.Event)
  /// The DEALER did not queue a message: no connection, or its high-water mark.
  case sendFailed
  /// The SUB could not connect to the publisher the machine asked for.
  case subscriberUnreachable
}

/// What a ``ClientMachine`` asks its driver to do, in order.
enum ClientAction: Equatable {
  /// A message for the broker's ROUTER.
  case send(BrokerMessage)
  /// The SUB socket must subscribe to a new key's topic.
  case subscribe(String)
  /// Connect the DEALER to another broker, disconnecting it from the old one: what is sent
  /// after this goes to the new one.
  case connectDealer(to: String, from: String)
  /// Connect the SUB to a publisher (disconnecting it from the old one); when it cannot,
  /// report ``ClientEvent/subscriberUnreachable``.
  case connectSubscriber(to: String, from: String?)
  /// Disconnect the SUB from a publisher.
  case disconnectSubscriber(from: String)
  /// The key at this index is stale: decode and re-apply its pending mutations, and hand the
  /// result back (``ClientMachine/rebased(_:)``) before any other event.
  case rebase(Int)
  /// Encode a write's value and hand it back (``ClientMachine/encoded(_:_:at:)``) before any
  /// other event.
  case encode(KeyMachine.Encode)
  /// The observers of the key at this index must be told of its value or errors.
  case notify(Int)
  /// The broker confirmed the key's mutations through this sequence: they are never re-applied.
  case confirmed(key: Int, through: UInt64)
  /// The broker refused to let this client write the key (`forbidden`): these mutations are
  /// dropped, never applied or sent again.
  case refused(key: Int, sequences: ClosedRange<UInt64>)
  /// Take another turn: writes may go out.
  case turn
  /// The connection's new state.
  case connection(BrokerClient.ConnectionState)
  /// A security handshake failed, or one succeeded (`nil`).
  case handshake(ConnectionReport.HandshakeFailure?)
  /// Waiters (for a confirmation, for the sync) may want to look again.
  case progressed
  /// The broker at this endpoint answered that it cannot reach its cluster's store.
  case brokerUnavailable(String)
  /// Worth a log line.
  case log(ClientNotice)
}

/// What a ``ClientMachine`` found worth a log line (it logs nothing itself).
enum ClientNotice: Equatable {
  /// The connected broker missed its heartbeats.
  case brokerStoppedAnswering
  /// The broker refused a request, with this code and text.
  case refused(BrokerErrorCode, String)
  /// The broker sent a request, which only a broker takes.
  case requestFromTheBroker
  /// The cluster announced a change of its brokers: these are the ones to move among now.
  case brokers([String])
}

extension ClientAction {
  /// The actions an event takes at most once, as plain values.
  enum Once: Equatable {
    case notify(Int)
    case rebase(Int)
    case progressed
    case turn
  }

  /// This action as one an event takes at most once (`nil` for the others): comparing these
  /// copies nothing, where `==` on two actions copies the payloads it compares.
  var once: Once? {
    switch self {
    case .notify(let key): .notify(key)
    case .rebase(let key): .rebase(key)
    case .progressed: .progressed
    case .turn: .turn
    case .send, .subscribe, .connectDealer, .connectSubscriber, .disconnectSubscriber, .encode,
      .confirmed, .refused, .connection, .handshake, .brokerUnavailable, .log:
      nil
    }
  }
}

/// The actions of one event, each `notify`, `rebase`, `progressed` and `turn` once, appended
/// to the owner's list: a list of their own cost an allocation per event.
private struct Actions {
  private var list: [ClientAction] = []
  /// Where this event's actions start in `list`.
  private let start: Int
  /// The once-only actions this event appended: flags, and a bit per key for the first 64 keys.
  /// Asking each action in the list instead copied every one of them for each action appended.
  private var progressed = false
  private var turn = false
  private var notified: UInt64 = 0
  private var rebased: UInt64 = 0

  /// Runs `body` with `list` taken over as one event's actions, then gives it back. Moved, not
  /// copied, so appending to it copies nothing.
  static func appending<Result>(
    to list: inout [ClientAction], _ body: (inout Actions) -> Result
  ) -> Result {
    var actions = Actions(start: list.count)
    swap(&actions.list, &list)
    defer { swap(&actions.list, &list) }
    return body(&actions)
  }

  private init(start: Int) {
    self.start = start
  }

  mutating func append(_ action: consuming ClientAction) {
    switch consume action {
    case .progressed:
      guard !progressed else { return }
      progressed = true
      list.append(.progressed)
    case .turn:
      guard !turn else { return }
      turn = true
      list.append(.turn)
    case .notify(let key):
      guard Self.mark(key, in: &notified) ?? !hasAppended(.notify(key)) else { return }
      list.append(.notify(key))
    case .rebase(let key):
      guard Self.mark(key, in: &rebased) ?? !hasAppended(.rebase(key)) else { return }
      list.append(.rebase(key))
    case let other:
      list.append(consume other)
    }
  }

  /// Marks `key` in `mask`: whether it was not marked before, or `nil` for a key past its bits.
  private static func mark(_ key: Int, in mask: inout UInt64) -> Bool? {
    guard (0..<UInt64.bitWidth).contains(key) else { return nil }
    let bit: UInt64 = 1 << key
    defer { mask |= bit }
    return mask & bit == 0
  }

  /// Whether this event appended `once` already, asked of each of its actions.
  private func hasAppended(_ once: ClientAction.Once) -> Bool {
    list[start...].contains { $0.once == once }
  }
}
