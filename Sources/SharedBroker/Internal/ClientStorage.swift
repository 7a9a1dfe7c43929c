import Foundation
internal import DequeModule
internal import Logging
internal import Sharing
import Synchronization

/// A ``BrokerClient``'s one lock and what it guards: the ``ClientMachine`` (the connection and
/// every key's state), what the machine must not hold (each key's codec, its pending mutations as
/// closures, how to tell its observers), and how the connection is reported.
///
/// Every call feeds the machine under the lock and carries out the ``ClientAction``s it returns
/// after unlocking, as swift-nio's `NIOAsyncWriter` storage does: no user code, codec, observer
/// or socket call ever runs under this lock. A mutation's body runs under its key's own lock
/// (the contract of `withLock`); rebased mutations and codecs run under no lock, their results
/// installed only if nothing changed meanwhile. Observers are told under no lock at all: a
/// writer's after it leaves its key's lock (a ``LockedRegion``).
///
/// The I/O thread (or the simulation in the tests) feeds it ``ClientEvent``s through
/// ``handle(_:at:via:)`` with a ``ClientTransport`` for what must reach the sockets; calls from
/// other threads record their work and wake that thread, once for any number of calls.
final class ClientStorage: Sendable {
  /// A mutation of the user's, kept until the broker confirms it, to re-apply in rebases.
  private struct Mutation {
    let sequence: UInt64
    let apply: @Sendable (inout KeyValue) -> Void
  }

  /// What the storage keeps of a key beside its machine.
  private struct Entry {
    let valueType: ObjectIdentifier
    let codec: BrokerCodec<KeyValue>
    /// Tells the key's reference of its value (or errors) and the value's stamp, so that an
    /// older notification never overtakes a newer one; `nil` once the client closed.
    var tell: (@Sendable (KeyValue, UInt64, _ onlyTheValue: Bool) -> Void)?
    /// The key's reference, until the client closes.
    var reference: AnyObject?
    /// The pending mutations, in sequence order (the confirmed ones are dropped).
    var mutations: Deque<Mutation> = []
    /// A rebase runs: a mutation that reads the key meanwhile sees the value before it.
    var rebasing = false
  }

  private struct State {
    var machine: ClientMachine
    var entries: [Entry] = []
    var connection = ConnectionReport()
  }

  private let state: Mutex<State>
  /// Wakes the I/O thread.
  private let wake: @Sendable () -> Void
  /// Signalled whenever waiters (for a confirmation, for the sync) may want to look again.
  let progress = AsyncSignal()
  let logger: Logger
  /// The client's endpoints, as log lines name them.
  let endpoint: String

  init(
    machine: ClientMachine, endpoint: String, logger: Logger,
    wake: @escaping @Sendable () -> Void
  ) {
    state = Mutex(State(machine: machine))
    self.endpoint = endpoint
    self.logger = logger
    self.wake = wake
  }

  // MARK: - For the keys' references (any thread)

  /// The reference of `key`, made by `make` (with the key's index) if the client does not mirror
  /// the key yet, or mirrors it with another value type.
  func reference<Value: Sendable & Equatable>(
    key: String, initialValue: Value, codec: BrokerCodec<Value>,
    at now: ContinuousClock.Instant = .now, make: (Int) -> BrokerReference<Value>
  ) -> BrokerReference<Value> {
    let (reference, wake) = state.withLock { state -> (BrokerReference<Value>, Bool) in
      if let index = state.machine.index(of: key),
        let existing = state.entries[index].reference as? BrokerReference<Value>
      {
        return (existing, false)
      }
      let (index, wake) = state.machine.add(key: key, initialValue: KeyValue(initialValue), at: now)
      let reference = make(index)
      let entry = Entry(
        valueType: ObjectIdentifier(Value.self),
        codec: BrokerCodec(
          decode: { KeyValue(try codec.decode($0)) },
          encode: { try codec.encode($0.as(Value.self)) }),
        tell: { [weak reference] value, stamp, onlyTheValue in
          reference?.changed(value, stamp: stamp, onlyTheValue: onlyTheValue)
        },
        reference: reference)
      if index == state.entries.count {
        state.entries.append(entry)
      } else {
        state.entries[index] = entry
      }
      return (reference, wake)
    }
    if wake { self.wake() }
    return reference
  }

  /// Applies a mutation to the local value of the key at `index`, which shows it at once; it
  /// stays pending until the broker confirms it. The caller holds the key's lock; `body` runs
  /// with no other lock held, so that it may read shared values, this key's too. Returns `nil`
  /// when the key is mirrored with another value type now (the reference was replaced).
  func mutate<Value: Sendable & Equatable, R>(
    _ index: Int, of reference: AnyObject, _ body: @escaping @Sendable (inout Value) throws -> R
  ) rethrows -> R? {
    let replaced = catchUp(index)
    let type = ObjectIdentifier(Value.self)
    let read = state.withLock { state in
      state.entries[index].valueType == type
        ? (state.machine.keys[index].local, state.machine.keys[index].readStamp) : nil
    }
    guard let (local, stamp) = read else { return nil }
    if let tracker = SharedChangeTracker.current {
      tracker.recordOldValue((replaced ?? local).as(Value.self), of: reference)
    }
    var value = local.as(Value.self)
    let result = try body(&value)
    let wake = state.withLock { state in
      guard state.entries[index].valueType == type else { return false }
      let (sequence, wake) = state.machine.record(index, KeyValue(value), readAt: stamp)
      state.entries[index].mutations.append(
        Mutation(sequence: sequence) { erased in
          var typed = erased.as(Value.self)
          _ = try? body(&typed)
          erased = KeyValue(typed)
        })
      return wake
    }
    if wake { self.wake() }
    tellObservers([index], onlyTheValue: true)
    return result
  }

  /// The local value of the key at `index` and its errors, read at once and brought up to
  /// date; a test store's assertion starts from the value it replaced. `nil` when the key is
  /// mirrored with another value type now (the reference was replaced).
  func reading<Value>(_ index: Int, of reference: AnyObject, as type: Value.Type)
    -> SharedReading<Value>?
  {
    let replaced = catchUp(index)
    let reading = state.withLock { state -> SharedReading<Value>? in
      guard state.entries[index].valueType == ObjectIdentifier(type) else { return nil }
      let key = state.machine.keys[index]
      return SharedReading(
        value: key.local.as(type), isLoading: !key.hasSnapshot, loadError: key.loadError,
        saveError: key.saveError)
    }
    if reading != nil, let replaced, let tracker = SharedChangeTracker.current {
      tracker.recordOldValue(replaced.as(type), of: reference)
    }
    return reading
  }

  /// Asks for a fresh snapshot of the key at `index`.
  func reload(_ index: Int) {
    if state.withLock({ $0.machine.reload(index) }) { wake() }
  }

  /// Whether every key named in `keys` (all keys for `nil`) satisfies `condition`.
  func keys(_ keys: [String]?, allSatisfy condition: (KeyMachine) -> Bool) -> Bool {
    let machine = self.machine
    guard let keys else { return machine.keys.allSatisfy(condition) }
    return keys.allSatisfy { key in
      machine.index(of: key).map { condition(machine.keys[$0]) } ?? true
    }
  }

  /// The machine as it is now.
  var machine: ClientMachine { state.withLock { $0.machine } }

  /// The brokers the client moves among, and the one its DEALER connects to.
  var brokers: BrokerList { state.withLock { $0.machine.brokers } }

  /// Whether the broker holds writes back while it collects its clients' copies.
  var isHeldBack: Bool { state.withLock { $0.machine.isHeldBack } }

  /// How many mutations of all keys await the broker's confirmation.
  var unconfirmedWriteCount: Int {
    state.withLock { $0.machine.keys.reduce(0) { $0 + $1.unconfirmedWriteCount } }
  }

  /// Brings the key at `index` up to date, if a rebase is due: decodes and re-applies the
  /// pending mutations with no lock held, then installs the result if nothing changed
  /// meanwhile (a few tries: a mutation recorded meanwhile makes it stale). Returns the local
  /// value it replaced, if it did; tells the observers and wakes the I/O thread as the machine
  /// asks.
  @discardableResult
  private func catchUp(_ index: Int) -> KeyValue? {
    let (replaced, actions) = rebase(index)
    var notify: [Int] = []
    for action in actions {
      switch action {
      case .notify(let index): notify.append(index)
      case .wake: wake()
      default: break
      }
    }
    tellObservers(notify)
    return replaced
  }

  private func rebase(_ index: Int) -> (replaced: KeyValue?, actions: [ClientAction]) {
    for _ in 0..<3 {
      let due = state.withLock { state -> (KeyMachine.Rebase, Entry)? in
        guard !state.entries[index].rebasing, let rebase = state.machine.rebaseDue(index) else {
          return nil
        }
        state.entries[index].rebasing = true
        return (rebase, state.entries[index])
      }
      // Nothing due, or another thread rebases: that thread installs the newest value or
      // leaves the rebase to the I/O thread.
      guard let (rebase, entry) = due else { return (nil, []) }
      let decoded = rebase.undecoded.map { data in Result { try entry.codec.decode(data) } }
      var value = (try? decoded?.get()) ?? rebase.confirmed
      if let pending = rebase.pending {
        // A mutation that reads other keys may bring them up to date: their observers hear of
        // it once the rebase is over.
        LockedRegion.run {
          for mutation in entry.mutations where pending.contains(mutation.sequence) {
            mutation.apply(&value)
          }
        }
      }
      let (applied, replaced, actions) = state.withLock { state in
        state.entries[index].rebasing = false
        return state.machine.rebased(rebase.result(decoded: decoded, local: value))
      }
      if applied { return (replaced, actions) }
    }
    // Newer values kept coming: a rebase skipped meanwhile on the I/O thread (this one held it)
    // would otherwise wait for the next event, its observers left on an older value.
    let wake = state.withLock { $0.machine.leaveRebase(index) }
    return (nil, wake ? [.wake] : [])
  }

  // MARK: - For the I/O thread

  /// When the machine next wants a turn.
  func deadline(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
    state.withLock { $0.machine.deadline(now: now) }
  }

  /// Feeds an event of the I/O thread to the machine and carries out what it asks for, with
  /// `transport` for what reaches the sockets.
  func handle(
    _ event: ClientEvent, at now: ContinuousClock.Instant, via transport: some ClientTransport
  ) {
    perform(step(event, at: now), at: now, via: transport)
  }

  private func step(_ event: ClientEvent, at now: ContinuousClock.Instant) -> [ClientAction] {
    state.withLock { state in
      let actions = state.machine.handle(event, at: now)
      // Confirmed mutations are never re-applied again.
      for index in state.entries.indices {
        let through = state.machine.keys[index].confirmedThrough
        while let first = state.entries[index].mutations.first, first.sequence <= through {
          state.entries[index].mutations.removeFirst()
        }
      }
      return actions
    }
  }

  private func perform(
    _ actions: [ClientAction], at now: ContinuousClock.Instant, via transport: some ClientTransport
  ) {
    var queue = actions
    var notify: [Int] = []
    var progressed = false
    var sendFailed = false
    var next = 0
    while next < queue.count {
      let action = queue[next]
      next += 1
      switch action {
      case .send(let message):
        // Once per batch: the machine resyncs every key at the first.
        if !transport.send(message), !sendFailed {
          sendFailed = true
          queue += step(.sendFailed, at: now)
        }
      case .subscribe(let key):
        transport.subscribe(to: key)
      case .connectDealer(let endpoint, let old):
        transport.connectDealer(to: endpoint, from: old)
      case .connectSubscriber(let endpoint, let old):
        if !transport.connectSubscriber(to: endpoint, from: old) {
          queue += step(.subscriberUnreachable, at: now)
        }
      case .disconnectSubscriber(let endpoint):
        transport.disconnectSubscriber(from: endpoint)
      case .rebase(let index):
        let (_, more) = rebase(index)
        queue += more
      case .encode(let request):
        let codec = state.withLock { $0.entries[request.key].codec }
        let data = Result { try codec.encode(request.value) }
        queue += state.withLock { $0.machine.encoded(request, data, at: now) }
      case .notify(let index):
        if !notify.contains(index) { notify.append(index) }
      case .wake:
        queue += step(.turn, at: now)
      case .connection(let connection):
        setState(connection)
      case .handshake(let failure):
        handshakeFailed(failure)
      case .progressed:
        progressed = true
      case .brokerUnavailable(let endpoint):
        brokerUnavailable(at: endpoint)
      case .log(let notice):
        log(notice)
      }
    }
    tellObservers(notify)
    if progressed { progress.signal() }
  }

  /// Tells the observers of the keys at `indices` of their values, read at once.
  /// `onlyTheValue`: a mutation, which cannot have changed the errors.
  private func tellObservers(_ indices: [Int], onlyTheValue: Bool = false) {
    guard !indices.isEmpty else { return }
    let observers = state.withLock { state in
      indices.compactMap { index in
        state.entries[index].tell.map { tell in
          (tell, state.machine.keys[index].local, state.machine.keys[index].localStamp)
        }
      }
    }
    for (tell, value, stamp) in observers { tell(value, stamp, onlyTheValue) }
  }

  private func log(_ notice: ClientNotice) {
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

  // MARK: - The connection's report

  /// Runs `body` on the connection's report, under the lock.
  func withConnection<R>(_ body: (inout ConnectionReport) -> R) -> R {
    state.withLock { body(&$0.connection) }
  }

  /// Lets go of the references once the client closes: they keep their values, and hear
  /// nothing more.
  func close() {
    state.withLock { state in
      for index in state.entries.indices {
        state.entries[index].tell = nil
        state.entries[index].reference = nil
      }
    }
  }
}

/// What the ``ClientStorage`` needs of the sockets: the I/O thread's ``ClientLoop``, or the
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
