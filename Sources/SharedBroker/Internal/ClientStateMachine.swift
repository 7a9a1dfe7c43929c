import Foundation
internal import OrderedCollections

/// A client's connection to the broker, as a state machine with no sockets or clocks of its own:
/// the handshake (`HELLO`/`WELCOME`), heartbeats (`PING`/`PONG`), which broker run it talks to,
/// and the routing of every message to its key's ``KeyStateMachine``. The I/O loop feeds it what
/// the sockets read and the time, through the ``ClientStorage`` that holds it, and performs the
/// ``ClientActions`` it collects; the deterministic simulation in the tests drives the same code.
/// It logs nothing and tells no one: what is worth a log line is a ``ClientNotice``.
///
/// Liveness comes from heartbeats: after `missedHeartbeats` intervals without any answer the
/// connection counts as lost, every key waits, and every mutation stays pending until the broker
/// answers again. A broker that answers as another run (`PONG` with another instance, or
/// `ERROR hello`) gets a new `HELLO`, after which every key resyncs from the start.
struct ClientStateMachine {
  /// The first retry of HELLO and of a key's SYNC. On loopback a new connection, or a
  /// subscription, is usually in effect within a millisecond or two, so the retries start short
  /// and double up to the heartbeat interval.
  static var firstRetry: Duration { .microseconds(250) }

  /// This client's id.
  let id: String
  private let heartbeat: Duration
  private let missedHeartbeats: Int

  /// In the order the keys were added, so the same events make the same messages (the
  /// simulation replays a seed exactly).
  private(set) var channels: OrderedDictionary<String, any BrokerChannel> = [:]
  private(set) var connected = false
  /// The broker run the connection talks to; `nil` while unknown (before a `WELCOME`, or after
  /// the connection dropped: the next one may reach another run, whose versions mean something
  /// else, so nothing is taken for the old run meanwhile).
  private(set) var brokerInstance: String?
  /// The largest value the broker accepts, as its WELCOME said. A bigger one is not sent: past
  /// its transport limit the broker's libzmq would drop the connection without a reply, and the
  /// write would wait for an answer that never comes.
  private var maxValueSize: UInt64?
  private var lastHeard: ContinuousClock.Instant
  private var lastPing: ContinuousClock.Instant
  /// While not connected, HELLO is retried quickly at first, then at the heartbeat interval.
  private var helloBackoff = ClientStateMachine.firstRetry
  /// When the connection was lost, or the client last asked to move to another broker: after as
  /// long again without a `WELCOME`, it asks to move on.
  private var lastMove: ContinuousClock.Instant
  private var nextWriteID: UInt64 = 1
  /// Keys the last PONG said the broker holds at another version, checked at the next tick,
  /// once the updates read meanwhile are applied.
  private var behind: [KeyVersion] = []
  /// The keys (by index) updated in the batch of published messages being read.
  private var updated: OrderedSet<Int> = []
  /// When each key (by its index in `channels`) next wants a tick, as its last event said: the
  /// loop asks on every turn, and a key's deadline changes only with its events.
  private var deadlines: [ContinuousClock.Instant?] = []

  init(id: String, heartbeat: Duration, missedHeartbeats: Int, now: ContinuousClock.Instant) {
    self.id = id
    self.heartbeat = heartbeat
    self.missedHeartbeats = missedHeartbeats
    lastHeard = now
    lastMove = now
    lastPing = now - .seconds(3600)
  }

  /// How long a broker may stay silent before the client counts it as lost.
  private var silenceLimit: Duration { heartbeat * missedHeartbeats }

  private var pingInterval: Duration { connected ? heartbeat : min(helloBackoff, heartbeat) }

  /// When the next ``tick(at:_:)`` is due.
  func deadline(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
    var deadline = lastPing + pingInterval
    // Keys tick only while the connection knows its broker run.
    if connected, brokerInstance != nil {
      for case let due? in deadlines { deadline = min(deadline, due) }
    }
    return max(deadline, now)
  }

  // MARK: - Requests from other threads

  /// Starts mirroring a key (or takes the new slot of a key re-added with another value type);
  /// a new key's topic needs a subscription. Returns the key's index, which its notifications
  /// (``ClientActions/changedKeys``) name.
  @discardableResult
  mutating func add(
    _ channel: any BrokerChannel, at now: ContinuousClock.Instant, _ actions: inout ClientActions
  ) -> Int {
    let (previous, index) = channels.updateValue(
      channel, forKey: channel.key, insertingAt: channels.count)
    if previous == nil {
      deadlines.append(nil)
      actions.subscriptions.append(channel.key)
    }
    if connected { handle(index, .connected(at: now), &actions) }
    updateState(&actions)
    return index
  }

  /// Asks for fresh snapshots of `keys` (explicit reloads).
  mutating func reload(
    _ keys: Set<String>, at now: ContinuousClock.Instant, _ actions: inout ClientActions
  ) {
    guard connected, let brokerInstance else { return }
    for key in keys {
      guard let index = channels.index(forKey: key) else { continue }
      handle(index, .reload(at: now, instance: brokerInstance), &actions)
    }
    updateState(&actions)
  }

  // MARK: - The connection

  /// The DEALER's connection was lost (it may come back to another broker run).
  mutating func connectionLost(_ actions: inout ClientActions) {
    brokerInstance = nil
    for index in channels.values.indices { handle(index, .connectionLost, &actions) }
  }

  /// The loop connected the DEALER to another broker: nothing is taken for the old one, answers
  /// to what was asked there never come, and the handshake starts over at once.
  mutating func movedBroker(at now: ContinuousClock.Instant, _ actions: inout ClientActions) {
    connectionLost(&actions)
    if connected {
      connected = false
      actions.state = .disconnected
    }
    helloBackoff = Self.firstRetry
    lastMove = now
    lastPing = now
    actions.messages.append(.hello(client: id))
  }

  /// A security handshake succeeded. The DEALER drops what is sent before its connection is up,
  /// so the first HELLO was probably lost: it is said again now rather than at the next retry.
  mutating func handshakeSucceeded(at now: ContinuousClock.Instant, _ actions: inout ClientActions)
  {
    guard !connected else { return }
    helloBackoff = Self.firstRetry
    actions.messages.append(.hello(client: id))
    lastPing = now
  }

  /// Time passed: heartbeats, retries, and the keys' own timers.
  mutating func tick(at now: ContinuousClock.Instant, _ actions: inout ClientActions) {
    if !behind.isEmpty, let brokerInstance {
      for held in behind {
        guard let index = channels.index(forKey: held.key) else { continue }
        handle(
          index, .brokerHolds(version: held.version, at: now, instance: brokerInstance), &actions)
      }
      behind = []
    }
    if connected, now - lastHeard > silenceLimit {
      actions.notices.append(.brokerStoppedAnswering)
      lose(at: now, &actions)
    } else if !connected, now - lastMove > silenceLimit {
      // No broker of the list has answered for as long: try the next one.
      actions.moveToNextBroker = true
      lastMove = now
    }
    if now - lastPing >= pingInterval {
      if connected {
        let held = channels.values.compactMap { channel in
          channel.heldVersion.map { KeyVersion(key: channel.key, version: $0) }
        }
        actions.messages.append(.ping(versions: held))
      } else {
        actions.messages.append(.hello(client: id))
        helloBackoff = min(helloBackoff * 2, heartbeat)
      }
      lastPing = now
    }
    guard connected, let brokerInstance else { return }
    for (index, deadline) in deadlines.enumerated() where deadline.map({ now >= $0 }) ?? false {
      handle(index, .tick(at: now, instance: brokerInstance), &actions)
    }
  }

  /// Sends the writes that may go out.
  mutating func flush(at now: ContinuousClock.Instant, _ actions: inout ClientActions) {
    guard connected else { return }
    for (index, channel) in channels.values.enumerated() where channel.hasUnconfirmedWrites {
      if handle(index, .flush(id: nextWriteID, at: now, maxValueSize: maxValueSize), &actions)
        .usedWriteID
      {
        nextWriteID += 1
      }
    }
  }

  // MARK: - Messages

  /// A reply on the DEALER.
  mutating func receive(
    reply: BrokerMessage, at now: ContinuousClock.Instant, _ actions: inout ClientActions
  ) {
    lastHeard = now
    switch reply {
    case .welcome(let instance, _, let maxValueSize):
      self.maxValueSize = maxValueSize
      guard !connected || instance != brokerInstance else { return }
      brokerInstance = instance
      connected = true
      for index in channels.values.indices { handle(index, .connected(at: now), &actions) }
      updateState(&actions)
    case .pong(let instance, let behind):
      if instance != brokerInstance || !connected {
        // A restarted broker: start over with HELLO (its WELCOME names its publisher).
        helloAgain(at: now, &actions)
      } else {
        self.behind = behind
      }
    case .snapshot(let key, _, _, _, _):
      route(reply, to: key, at: now, &actions)
      updateState(&actions)
    case .ack(let key, _, _), .reject(let key, _, _, _, _, _):
      guard connected else { return }
      route(reply, to: key, at: now, &actions)
    case .error(.unavailable, _, _, _):
      // The broker cannot reach its cluster's store: another broker of the cluster can.
      actions.brokerUnavailable = true
      if connected {
        lose(at: now, &actions)
      } else if now - lastMove >= heartbeat {
        actions.moveToNextBroker = true
        lastMove = now
      }
    case .error(.helloFirst, _, _, _):
      // The connection is new to the broker (it restarted, or the connection was re-made): the
      // request was not handled. Handshake again; the keys resync and the writes go out again.
      helloAgain(at: now, &actions)
    case .error(let code, let message, let key, _):
      if code != .seeding { actions.notices.append(.refused(code, message)) }
      guard connected, let key else { return }
      route(reply, to: key, at: now, &actions)
    case .hello, .ping, .sync, .get, .seed, .write, .update, .synced:
      actions.notices.append(.requestFromTheBroker)
    }
  }

  /// The messages the PUB socket had waiting, in order. Updates are applied (decoded, shown to
  /// observers) once per batch.
  mutating func receive(
    published messages: [BrokerMessage], at now: ContinuousClock.Instant,
    _ actions: inout ClientActions
  ) {
    for message in messages { receive(published: message, at: now, &actions) }
    finishBatch(&actions)
  }

  /// A message from the PUB socket. Updates are applied (decoded, shown to observers) once per
  /// batch, by ``finishBatch(_:)``.
  private mutating func receive(
    published message: BrokerMessage, at now: ContinuousClock.Instant,
    _ actions: inout ClientActions
  ) {
    switch message {
    case .update(let key, _, _, _, _):
      guard let index = channels.index(forKey: key) else { return }
      handle(index, .received(message, at: now, instance: brokerInstance), &actions)
      updated.append(index)
    case .synced(let key, _):
      route(message, to: key, at: now, &actions)
    default:
      break
    }
  }

  /// The batch of published messages read is over.
  private mutating func finishBatch(_ actions: inout ClientActions) {
    guard !updated.isEmpty else { return }
    for index in updated where channels.values[index].deliverUpdates() {
      actions.changed(index)
    }
    updated.removeAll(keepingCapacity: true)
    actions.progressed = true
  }

  private mutating func route(
    _ message: BrokerMessage, to key: String, at now: ContinuousClock.Instant,
    _ actions: inout ClientActions
  ) {
    guard let index = channels.index(forKey: key) else { return }
    handle(index, .received(message, at: now, instance: brokerInstance), &actions)
  }

  /// Feeds the key at `index` and keeps what it asks for.
  @discardableResult
  private mutating func handle(_ index: Int, _ event: KeyEvent, _ actions: inout ClientActions)
    -> KeyOutput
  {
    let output = channels.values[index].handle(event)
    deadlines[index] = output.deadline
    if output.changed { actions.changed(index) }
    if let message = output.send { actions.messages.append(message) }
    if output.progressed { actions.progressed = true }
    return output
  }

  /// The broker is lost: every key waits, with its mutations pending, and the client asks to
  /// move to the next broker, if it has several.
  private mutating func lose(at now: ContinuousClock.Instant, _ actions: inout ClientActions) {
    connected = false
    for index in channels.values.indices { handle(index, .disconnected, &actions) }
    helloBackoff = Self.firstRetry
    actions.state = .disconnected
    actions.moveToNextBroker = true
    lastMove = now
  }

  /// Starts the handshake over, as after a lost connection.
  private mutating func helloAgain(at now: ContinuousClock.Instant, _ actions: inout ClientActions)
  {
    connected = false
    helloBackoff = Self.firstRetry
    actions.messages.append(.hello(client: id))
    lastPing = now
  }

  /// Reports the connection's state, while connected: syncing until every key is in sync.
  func updateState(_ actions: inout ClientActions) {
    guard connected else { return }
    actions.state = channels.values.allSatisfy(\.isSynced) ? .connected : .syncing
    actions.progressed = true
  }
}

/// What a ``ClientStateMachine`` asks its loop to do, collected over one turn.
struct ClientActions {
  /// Messages for the broker's ROUTER, in order.
  var messages: [BrokerMessage] = []
  /// The connection's new state, if it changed.
  var state: BrokerClient.ConnectionState?
  /// Waiters (for a confirmation, for the sync) may want to look again.
  var progressed = false
  /// The broker is lost: connect to the next of the client's brokers (if it has more than one)
  /// before sending anything else.
  var moveToNextBroker = false
  /// The broker answered that it cannot reach its cluster's store.
  var brokerUnavailable = false
  /// New keys whose topics the SUB socket must subscribe to.
  var subscriptions: [String] = []
  /// The keys (by index) whose value or errors changed: their observers must be told.
  private(set) var changedKeys: [Int] = []
  /// What is worth a log line.
  var notices: [ClientNotice] = []

  /// Adds what `other` asks for after what this asks for, and empties `other`.
  mutating func append(_ other: inout ClientActions) {
    messages.append(contentsOf: other.messages)
    state = other.state ?? state
    progressed = progressed || other.progressed
    moveToNextBroker = moveToNextBroker || other.moveToNextBroker
    brokerUnavailable = brokerUnavailable || other.brokerUnavailable
    subscriptions.append(contentsOf: other.subscriptions)
    for index in other.changedKeys { changed(index) }
    notices.append(contentsOf: other.notices)
    other = ClientActions()
  }

  /// Notes that the observers of the key at `index` must be told, once per turn.
  mutating func changed(_ index: Int) {
    if !changedKeys.contains(index) { changedKeys.append(index) }
  }

  /// Takes the keys whose observers must be told.
  mutating func takeChangedKeys() -> [Int] {
    defer { changedKeys.removeAll(keepingCapacity: true) }
    return changedKeys
  }
}

/// What a ``ClientStateMachine`` found worth a log line (it logs nothing itself).
enum ClientNotice: Equatable {
  /// The connected broker missed its heartbeats.
  case brokerStoppedAnswering
  /// The broker refused a request, with this code and text.
  case refused(BrokerErrorCode, String)
  /// The broker sent a request, which only a broker takes.
  case requestFromTheBroker
}
