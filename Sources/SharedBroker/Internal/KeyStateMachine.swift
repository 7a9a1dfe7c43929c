import Foundation

/// The mirroring of one key, as a state machine with no locks, sockets or clocks of its own:
/// events go in (a mutation, a message from the broker, a connection, the time), and what to
/// send comes out. Its ``KeySlot`` sits in the ``ClientStateMachine``, under the
/// ``ClientStorage``'s lock; the deterministic simulation in the tests drives the same code.
///
/// **The value.** The local value is always "confirmed + pending": the last value the broker
/// confirmed, with this process's unconfirmed mutations applied on top, so a write shows at once.
/// When another process's write arrives, or the broker rejects ours, the pending mutations are
/// re-applied on the new confirmed value (a rebase). Other processes' values are decoded lazily:
/// an update only records its bytes, and the decode and rebase happen when the value is read or
/// once per batch the loop reads, so a burst costs one decode. The machine never runs a
/// mutation itself: it hands a due rebase out (``rebaseDue()``) and takes the result back
/// (``rebased(_:_:)``), so a mutation may read shared values, its own key's included.
///
/// **The phases.** Per connection the key walks `probing → snapshotting → synced`: first it proves
/// its subscription to the key's topic is in effect (`SYNC`, answered on the PUB socket by
/// `SYNCED`), then asks for its state, so no update can fall between the snapshot and the stream.
/// To a broker run other than the one that confirmed the value (which may have lost it), the
/// question offers the confirmed copy (`SEED`) instead of a plain `GET`.
///
/// **The writes.** Only a synced key writes: a compare-and-set covering every mutation not yet
/// sent, pipelined behind the previous one (`after`), so the broker applies it only on top of
/// that write; a rejection dooms the rest of the chain, and the rebase resends everything at
/// once. Each write has an id and the broker's `lastWrite` tells which ones it applied, so no
/// mutation is applied twice or dropped. The window of writes in flight works like TCP's
/// congestion window: it starts at the maximum, falls to 1 on a rejection (the key is
/// contended), and grows by one with every applied write.
///
/// **The type.** The machine holds values as ``KeyValue``s, whatever their type (see there why
/// it is not generic); the key's reference takes out the typed value.
struct KeyStateMachine {

  /// A mutation of the user's, kept until the broker confirms it.
  struct Pending {
    let sequence: UInt64
    let mutation: @Sendable (inout KeyValue) -> Void
  }

  /// What re-applying the pending mutations on a newer confirmed value needs.
  struct Rebase {
    /// The newest confirmed value.
    let base: KeyValue
    /// The mutations to re-apply on it, in order.
    let pending: [Pending]
    /// The machine's state it was taken in, to tell a result that no longer applies.
    fileprivate let stamp: (UInt64, UInt64)
  }

  private struct SentWrite {
    let id: UInt64
    let coversThrough: UInt64
    let value: KeyValue
    /// The version the write makes if the broker applies it.
    let version: UInt64
  }

  let key: String
  /// This client's id, which tells its own writes from others' on the PUB stream.
  private let clientID: String
  private let codec: BrokerCodec<KeyValue>
  /// The value type's name, for errors.
  private let typeName: String
  private let heartbeat: Duration
  private let maxWindow: Int

  private(set) var phase = KeyPhase.idle
  /// The local value: confirmed + pending, once brought up to date (``rebaseDue()``).
  private(set) var local: KeyValue
  private(set) var loadError: (any Error)?
  private(set) var saveError: (any Error)?
  /// A snapshot arrived, and no reload was asked for since.
  private(set) var hasSnapshot = false
  /// `local` changed (while being brought up to date) without observers being told.
  private var unnotified = false

  /// The last value the broker confirmed (once brought up to date).
  private(set) var confirmed: KeyValue
  /// The version of `confirmed`, on the broker run `instance` (versions count per run).
  private(set) var version: UInt64 = 0
  private(set) var instance: String?
  /// The bytes of a confirmed value newer than `confirmed`, not decoded yet.
  private var undecoded: Data?
  /// `local` is stale: confirmed changed under the pending mutations.
  private var needsRebase = false
  private var pending: [Pending] = []
  private var nextSequence: UInt64 = 1
  /// The newest sequence the broker confirmed: `pending` holds those after it.
  private var confirmedThrough: UInt64 = 0
  /// Writes in flight, oldest first. Kept across a lost connection until the next snapshot,
  /// whose `lastWrite` tells which of them the broker applied.
  private var sent: [SentWrite] = []
  /// Writes that were in flight when a broker answered without them: another broker of a
  /// cluster, or a copy of an earlier run adopted later, may still hold them, in id order.
  private var unresolved: [SentWrite] = []
  /// How many writes may be in flight (`nil`: the maximum).
  private var window: Int?
  private var retryAfter: ContinuousClock.Instant?
  /// Questions (`GET`, `SEED`) asked since the key last took a snapshot.
  private var questions = 0
  /// Answers still to come to questions asked before the key last took a snapshot.
  private var staleAnswers = 0
  /// The writes seen applied, for a copy offered to a broker that lost the key.
  private var writers = RecentWriters()

  init<Value: Sendable & Equatable>(
    key: String, clientID: String, initialValue: Value, codec: BrokerCodec<Value>,
    heartbeat: Duration,
    maxWritesInFlight: Int
  ) {
    self.key = key
    self.clientID = clientID
    self.codec = BrokerCodec(
      decode: { KeyValue(try codec.decode($0)) },
      encode: { try codec.encode($0.as(Value.self)) }
    )
    typeName = "\(Value.self)"
    self.heartbeat = heartbeat
    self.maxWindow = maxWritesInFlight
    confirmed = KeyValue(initialValue)
    local = confirmed
  }

  /// Mutations the broker has not confirmed.
  var hasUnconfirmedWrites: Bool { nextSequence - 1 > confirmedThrough }
  /// How many mutations the broker has not confirmed.
  var unconfirmedWriteCount: Int { pending.count }
  /// How many writes await the broker's answer.
  var writesInFlight: Int { sent.count }
  /// In sync with the broker this client is connected to.
  var isSynced: Bool { phase == .synced && hasSnapshot }
  /// The confirmed version, for a `PING`, while in sync.
  var heldVersion: UInt64? { phase == .synced ? version : nil }

  /// When the key next wants a ``KeyEvent/tick(at:instance:)``, if it waits for one.
  var deadline: ContinuousClock.Instant? {
    switch phase {
    case .probing(let next, _):
      return next
    case .snapshotting(let sent):
      return sent + heartbeat
    case .synced:
      return retryAfter
    case .idle:
      return nil
    }
  }

  // MARK: - Events

  /// Records a mutation of the user's: `value` is what it made of the local value (brought up to
  /// date first, ``rebaseDue()``), and it stays pending until confirmed. The caller ran it, outside
  /// the machine, so that it may read shared values, and tells the observers afterwards.
  mutating func record<Value: Sendable & Equatable>(
    _ value: Value, by mutation: @escaping @Sendable (inout Value) -> Void
  ) {
    local = KeyValue(value)
    let erased: @Sendable (inout KeyValue) -> Void = { value in
      var typed = value.as(Value.self)
      mutation(&typed)
      value = KeyValue(typed)
    }
    pending.append(Pending(sequence: nextSequence, mutation: erased))
    nextSequence += 1
    unnotified = false
  }

  mutating func handle(_ event: KeyEvent) -> KeyOutput {
    var output = KeyOutput()
    switch event {
    case .connected(let now):
      phase = .probing(next: now, backoff: ClientStateMachine.firstRetry)
    case .disconnected:
      // A handshake again, or heartbeats missed, on what may still be the same connection:
      // answers to the questions asked on it may still come, and are still counted.
      phase = .idle
    case .connectionLost:
      // Answers to questions asked on the lost connection never come.
      (questions, staleAnswers) = (0, 0)
      phase = .idle
    case .tick(let now, let instance):
      switch phase {
      case .probing(let next, let backoff) where now >= next:
        output.send = .sync(client: clientID, key: key)
        let backoff = min(backoff * 2, heartbeat)
        phase = .probing(next: now + backoff, backoff: backoff)
      case .snapshotting(let sent) where now - sent >= heartbeat:
        output.send = askForState(at: now, instance: instance)
      case .synced where retryAfter.map { now >= $0 } ?? false:
        // Writes may go out again (the flush that follows sends them).
        retryAfter = nil
      default:
        break
      }
    case .received(let message, let now, let instance):
      output = receive(message, at: now, instance: instance)
    case .brokerHolds(let version, let now, let instance):
      // An idle key only: a write in flight learns the version from its answer.
      if phase == .synced, sent.isEmpty, self.version < version {
        output.send = askForState(at: now, instance: instance)
      }
    case .reload(let now, let instance):
      if phase == .synced { output.send = askForState(at: now, instance: instance) }
    case .flush(let id, let now, let maxValueSize):
      output = flush(id: id, at: now, maxValueSize: maxValueSize)
    }
    output.deadline = deadline
    output.changed = takeUnnotified()
    return output
  }

  /// Decodes the newest confirmed value, if one arrived; then, if the confirmed value changed
  /// under pending mutations, returns what re-applying them needs. The caller runs them and
  /// hands the result to ``rebased(_:_:)``.
  mutating func rebaseDue() -> Rebase? {
    decode()
    guard needsRebase else { return nil }
    return Rebase(base: confirmed, pending: pending, stamp: (nextSequence, version))
  }

  /// Takes a rebase's result. A changed local value is left for the next notification
  /// (``unnotified``); returns the value it replaced, if it did (a test store's assertion
  /// starts from it). A result that no longer applies (a mutation was recorded, or a newer
  /// value confirmed, while it ran) is dropped, and the rebase stays due.
  mutating func rebased(_ value: KeyValue, _ rebase: Rebase) -> KeyValue? {
    guard rebase.stamp == (nextSequence, version), !hasUndecodedValue else { return nil }
    needsRebase = false
    guard value != local else { return nil }
    defer { local = value }
    unnotified = true
    return local
  }

  /// Whether the local value changed without observers being told; they are about to be.
  mutating func takeUnnotified() -> Bool {
    defer { unnotified = false }
    return unnotified
  }

  private var hasUndecodedValue: Bool { undecoded != nil }

  /// Decodes the newest confirmed value, if one arrived.
  private mutating func decode() {
    if let data = undecoded {
      undecoded = nil
      let hadError = loadError != nil
      do {
        confirmed = try codec.decode(data)
        loadError = nil
      } catch {
        // Keep the last good value; the next write of ours replaces the bad one.
        loadError = BrokerError(
          .undecodableValue, key: key,
          "The broker's value for \"\(key)\" is not a \(typeName): \(error)"
        )
      }
      // Observers show the error next to the value: its coming and going is news to them too.
      if hadError != (loadError != nil) { unnotified = true }
    }
  }

  /// Forgets being in sync until the next snapshot, which a ``KeyEvent/reload(at:instance:)``
  /// asks for (the caller's thread marks it at once, the loop asks when it next turns).
  mutating func markStale() {
    hasSnapshot = false
  }

  // MARK: - Messages

  private mutating func receive(
    _ message: BrokerMessage, at now: ContinuousClock.Instant, instance: String?
  ) -> KeyOutput {
    var output = KeyOutput()
    switch message {
    case .synced(_, let requester):
      guard requester == clientID, case .probing = phase, let instance else { break }
      output.send = askForState(at: now, instance: instance)
    case .snapshot(_, let version, let lastWrite, let value, let writes):
      // Only the answer to the latest question: no write goes out while one is awaited, so its
      // lastWrite accounts for every write in flight. The answer to an earlier question (asked
      // again after a timeout, and answered late) may predate writes sent since; taking it would
      // drop their mutations from the in-flight set and apply them a second time after the
      // broker has. Answers come in the order of the questions, so the earlier ones are counted.
      if staleAnswers > 0 {
        staleAnswers -= 1
        break
      }
      guard case .snapshotting = phase, let instance else { break }
      take(version: version, lastWrite: lastWrite, value: value, writes: writes, instance: instance)
      phase = .synced
      hasSnapshot = true
      staleAnswers = max(0, questions - 1)
      questions = 0
      output.progressed = true
    case .error(_, _, _, 0):
      // A question answered "ask again later" (a broker collecting copies after a restart):
      // asked again after a heartbeat.
      if staleAnswers > 0 {
        staleAnswers -= 1
      } else if case .snapshotting = phase {
        questions = max(0, questions - 1)
      }
    case .ack(_, let write, let version):
      guard phase == .synced, settle(write, version: version) else { break }
      writers.record(clientID, write: write)
      output.progressed = true
    case .reject(_, let write, let version, let lastWrite, let value, let writes):
      // The writes behind it are doomed (each is chained to it): their answers are ignored.
      guard phase == .synced, sent.contains(where: { $0.id == write }), let instance else { break }
      window = 1
      take(version: version, lastWrite: lastWrite, value: value, writes: writes, instance: instance)
      output.progressed = true
    case .error(let code, let text, _, let write?):
      guard phase == .synced, sent.contains(where: { $0.id == write }) else { break }
      // Nothing in flight was applied (a storage failure, or a broker collecting copies after
      // a restart); all of it is retried after a heartbeat.
      sent = []
      retryAfter = now + heartbeat
      if code != .seeding { refused(code, text) }
      output.progressed = true
    case .update(_, let version, let writer, let write, let value):
      output.send = update(
        version: version, writer: writer, write: write, value: value, at: now, instance: instance)
      output.progressed = true
    default:
      break
    }
    return output
  }

  /// An update from the PUB socket; returns the question to ask when versions were skipped.
  private mutating func update(
    version: UInt64, writer: String, write: UInt64, value: Data, at now: ContinuousClock.Instant,
    instance: String?
  ) -> BrokerMessage? {
    // Taken only from the run whose snapshot this client holds (an update of another run may
    // arrive first on the SUB socket after a restart).
    guard let instance, instance == self.instance else { return nil }
    // A writer is recorded only with a value that includes its write: a copy offered with the
    // record but not the write would make the writer drop a mutation the broker never got.
    guard version > self.version else {
      if write > 0 { writers.record(writer, write: write) }
      return nil
    }
    // Our own write coming back: its value is the one we encoded, no need to decode it (the
    // same assumption an ACK makes), which keeps the writer's CPU free for readers.
    if writer == clientID, settle(write, version: version) {
      writers.record(writer, write: write)
      return nil
    }
    // Updates were dropped (the value would include writes whose writers this client did not
    // see), or an adopted copy may hold writes of ours that no answer accounted for yet: a
    // snapshot brings the value with its writers.
    if hasSnapshot && version > self.version + 1 || write == 0 && !unresolved.isEmpty {
      return phase == .synced ? askForState(at: now, instance: instance) : nil
    }
    if write > 0 { writers.record(writer, write: write) }
    if writer == clientID { acknowledge(applied: write) }
    accept(version: version, value: value)
    return nil
  }

  /// The broker's current state (a snapshot, or the answer to a rejected write). From a run
  /// other than the one the confirmed value came from, it replaces that value whatever its
  /// version: versions count per run.
  private mutating func take(
    version: UInt64, lastWrite: UInt64, value: Data, writes: [String: UInt64], instance: String
  ) {
    // Writes above `lastWrite` are not applied now, but may yet be: another broker of a
    // cluster may still be deciding them, and a copy from an earlier run that holds them may
    // still be adopted. Their mutations are resent under new ids; should an answer show one of
    // them applied after all (its id at or below a `lastWrite`, or our own update), its
    // mutations are confirmed instead of being applied twice.
    unresolved.append(contentsOf: sent)
    acknowledge(applied: lastWrite)
    sent = []
    if instance != self.instance || version >= self.version {
      self.instance = instance
      accept(version: version, value: value)
      // The writes the value includes that this client did not see as updates.
      for (writer, write) in writes.sorted(by: { $0.key < $1.key }) {
        writers.record(writer, write: write)
      }
    }
    // The pending mutations go on top of this value: the key's slot rebases after the event.
    needsRebase = true
  }

  /// Asks for the key's state: with `GET`, or, to a broker run other than the one that
  /// confirmed this client's copy (which may have lost the key), by offering that copy (`SEED`).
  private mutating func askForState(at now: ContinuousClock.Instant, instance: String)
    -> BrokerMessage
  {
    phase = .snapshotting(sent: now)
    questions += 1
    if let origin = self.instance, origin != instance, version > 0,
      let copy = undecoded ?? (try? codec.encode(confirmed))
    {
      return .seed(
        client: clientID, key: key, origin: origin, version: version, value: copy,
        writes: writers.writes
      )
    }
    return .get(client: clientID, key: key)
  }

  // MARK: - Writes

  private mutating func flush(id: UInt64, at now: ContinuousClock.Instant, maxValueSize: UInt64?)
    -> KeyOutput
  {
    var output = KeyOutput()
    guard phase == .synced, sent.count < window ?? maxWindow, let last = pending.last,
      last.sequence > sent.last?.coversThrough ?? 0
    else { return output }
    if let retry = retryAfter {
      guard now >= retry else { return output }
      retryAfter = nil
    }
    // Computed on an older confirmed value, the local one would undo that value's writes; the
    // slot rebases before a flush, and this write goes out once it did.
    guard !needsRebase, undecoded == nil else { return output }
    let data: Data
    do {
      data = try codec.encode(local)
    } catch {
      failed(
        BrokerError(
          .unencodableValue, key: key, "The value of \"\(key)\" cannot be encoded: \(error)"))
      retryAfter = now + heartbeat
      return output
    }
    output.usedWriteID = true
    output.progressed = true
    if let maxValueSize, data.count > maxValueSize {
      // What the broker would answer, without the round trip; retried like its answer.
      retryAfter = now + heartbeat
      refused(
        .tooLarge, "value of \(data.count) bytes exceeds the broker's limit of \(maxValueSize)")
      return output
    }
    let previous = sent.last
    let base = previous?.version ?? version
    sent.append(SentWrite(id: id, coversThrough: last.sequence, value: local, version: base + 1))
    output.send = .write(
      client: clientID, write: id, key: key, base: base, value: data, after: previous?.id)
    return output
  }

  /// The broker refused the writes in flight (or would have); they stay pending.
  private mutating func refused(_ code: BrokerErrorCode, _ text: String) {
    failed(
      BrokerError(
        .refused(code), key: key, "The broker refused the write (\(code.rawValue)): \(text)"))
  }

  /// Sets the save error; its coming is news to observers, who show it next to the value.
  private mutating func failed(_ error: BrokerError) {
    if saveError == nil { unnotified = true }
    saveError = error
  }

  /// The broker applied our write `write` as `version`: its value becomes the confirmed one,
  /// the writes up to it leave the window, and the window widens. Returns `false` for a write
  /// not in flight (already confirmed, or its chain was dropped).
  ///
  /// No rebase is needed: the write was computed on the chain the local value extends, and any
  /// other process's change published before it would have made the broker reject it.
  private mutating func settle(_ write: UInt64, version: UInt64) -> Bool {
    guard let index = sent.firstIndex(where: { $0.id == write }) else { return false }
    let own = sent[index]
    // A cleared error is news to observers, who show it next to the value.
    if saveError != nil || (version > self.version && loadError != nil) { unnotified = true }
    if version > self.version {
      confirmed = own.value
      self.version = version
      undecoded = nil
      loadError = nil
    }
    saveError = nil
    acknowledge(through: own.coversThrough)
    sent.removeFirst(index + 1)
    // The broker's record of our last write is now past them: they can never apply.
    if let newest = unresolved.lastIndex(where: { $0.id < write }) {
      unresolved.removeFirst(newest + 1)
    }
    if let narrowed = window { window = narrowed + 1 >= maxWindow ? nil : narrowed + 1 }
    return true
  }

  /// Drops the mutations covered by the newest write the broker applied (`lastWrite`).
  private mutating func acknowledge(applied lastWrite: UInt64) {
    if let newest = sent.lastIndex(where: { $0.id <= lastWrite }) {
      acknowledge(through: sent[newest].coversThrough)
      sent.removeFirst(newest + 1)
    }
    if let newest = unresolved.lastIndex(where: { $0.id <= lastWrite }) {
      acknowledge(through: unresolved[newest].coversThrough)
      unresolved.removeFirst(newest + 1)
    }
  }

  private mutating func acknowledge(through sequence: UInt64) {
    // `pending` is in sequence order, so the confirmed ones are a prefix.
    let confirmed = pending.firstIndex { $0.sequence > sequence } ?? pending.count
    pending.removeFirst(confirmed)
    confirmedThrough = max(confirmedThrough, sequence)
  }

  private mutating func accept(version: UInt64, value: Data) {
    self.version = version
    needsRebase = true
    guard !value.isEmpty else { return }
    undecoded = value
  }
}

/// What happens to a key, as its ``KeyStateMachine`` hears of it.
enum KeyEvent {
  /// A connection to the broker is up (again): start over with `SYNC`.
  case connected(at: ContinuousClock.Instant)
  /// The connection is down, or answers as another broker run: wait for the next handshake.
  case disconnected
  /// The DEALER's connection was lost: nothing asked on it will be answered.
  case connectionLost
  /// Time passed.
  case tick(at: ContinuousClock.Instant, instance: String)
  /// A reply or a published message about this key, from the broker run `instance` (`nil`
  /// while the loop does not know which run it talks to).
  case received(BrokerMessage, at: ContinuousClock.Instant, instance: String?)
  /// The broker holds the key at `version` (a `PONG`), which may show updates were dropped.
  case brokerHolds(version: UInt64, at: ContinuousClock.Instant, instance: String)
  /// Someone asked for a fresh snapshot (an explicit reload, marked by `markStale()`).
  case reload(at: ContinuousClock.Instant, instance: String)
  /// A write may go out, with the id `id`, to a broker that takes values of up to
  /// `maxValueSize` bytes.
  case flush(id: UInt64, at: ContinuousClock.Instant, maxValueSize: UInt64?)
}

/// What the loop must do after a ``KeyEvent``.
struct KeyOutput {
  /// A message for the broker.
  var send: BrokerMessage?
  /// The event used the write id it offered.
  var usedWriteID = false
  /// Waiters (for a confirmation, for the sync) may want to look again.
  var progressed = false
  /// When the key next wants a tick, if it waits for one (only events change it).
  var deadline: ContinuousClock.Instant?
  /// The local value changed (or its errors did): the observers must be told.
  var changed = false
}

/// Where a key stands with the broker, per connection.
enum KeyPhase: Equatable {
  /// Not connected: nothing is sent.
  case idle
  /// `SYNC` goes out at `next`, then at a doubling interval up to the heartbeat.
  case probing(next: ContinuousClock.Instant, backoff: Duration)
  /// `GET` or `SEED` went out at `sent`; asked again after a heartbeat.
  case snapshotting(sent: ContinuousClock.Instant)
  case synced
}
