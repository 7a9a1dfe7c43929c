import Foundation

/// The mirroring of one key, a part of the ``ClientMachine`` value: no locks, sockets, clocks,
/// closures or codecs of its own. Every change is a ``KeyEvent`` (a mutation, a message from the
/// broker, a connection, the time, a rebase's or an encoding's result) and every event returns
/// one ``KeyOutput``: what to send, encode, rebase or tell, and when to come back.
///
/// **The value.** The local value is always "confirmed + pending": the last value the broker
/// confirmed, with this process's unconfirmed mutations applied on top, so a write shows at once.
/// When another process's write arrives, or the broker rejects ours, the pending mutations must
/// be re-applied on the new confirmed value (a rebase). The machine never decodes a value or runs
/// a mutation: it hands a due rebase out (``rebaseDue()``: the bytes to decode, the last good
/// value, the newest confirmed mutation) and takes the result back (``KeyEvent/rebased(_:)``).
/// The mutations themselves live in the key's ``KeySlot``; the machine hears of each one's
/// result (``KeyEvent/mutated(sequence:value:)``) from the client's mailbox. Other processes' values are decoded lazily, once
/// per batch of updates.
///
/// **The phases.** Per connection the key walks `probing → snapshotting → synced`: first it proves
/// its subscription to the key's topic is in effect (`SYNC`, answered on the PUB socket by
/// `SYNCED`), then asks for its state, so no update can fall between the snapshot and the stream.
/// To a broker run other than the one that confirmed the value (which may have lost it), the
/// question offers the confirmed copy (`SEED`) instead of a plain `GET`. What only a synced key
/// needs (its window, when its writes may go out again) is in its phase, ``SyncedState``; the
/// writes in flight and the answers still owed are not, as they outlive a connection: the next
/// snapshot's `lastWrite` settles the writes, and answers to questions asked before it are
/// counted out.
///
/// **The writes.** Only a synced key writes: a compare-and-set covering every mutation not yet
/// sent, pipelined behind the previous one (`after`), so the broker applies it only on top of
/// that write; a rejection dooms the rest of the chain, and the rebase resends everything at
/// once. Each write has an id and the broker's `lastWrite` tells which ones it applied, so no
/// mutation is applied twice or dropped. Writes go out quiet (`WRITEQ`): the broker answers an
/// applied one with its update alone, which a synced key hears. Should the PUB socket drop that
/// update, a `PONG` showing the broker ahead of a write sent a retry interval ago asks for the
/// state, whose `lastWrite` settles it. The window of writes in flight works like TCP's
/// congestion window: it starts at the maximum, falls to 1 on a rejection (the key is
/// contended), and grows by one with every applied write. A write's value is encoded outside the
/// machine: ``KeyEvent/flush(id:at:)`` asks for it (``Encode``) and
/// ``KeyEvent/encoded(_:_:at:maxValueSize:)`` sends it.
struct KeyMachine {

  /// What re-applying the pending mutations on a newer confirmed value needs.
  struct Rebase {
    let key: Int
    /// The newest confirmed value's bytes, when they are not decoded yet.
    let undecoded: Data?
    /// The last good confirmed value: the base when there is nothing to decode, or it fails.
    let confirmed: KeyValue
    /// The newest mutation the broker confirmed: the ones after it are re-applied, in order.
    let confirmedThrough: UInt64

    /// The result of this rebase, for ``KeyEvent/rebased(_:)``.
    func result(decoded: Result<KeyValue, any Error>?, local: KeyValue, through: UInt64)
      -> Rebased
    {
      Rebased(key: key, decoded: decoded, local: local, through: through)
    }
  }

  /// A rebase's result, computed outside the machine.
  struct Rebased {
    let key: Int
    /// The decoded value, or why it did not decode (`nil`: there was nothing to decode).
    let decoded: Result<KeyValue, any Error>?
    /// The base with the pending mutations applied.
    let local: KeyValue
    /// The newest mutation `local` includes.
    let through: UInt64
  }

  /// A write to encode outside the machine: the local value, covering the mutations up to
  /// `coversThrough`, as the write `id`.
  struct Encode: Equatable {
    let key: Int
    let id: UInt64
    let value: KeyValue
    fileprivate let coversThrough: UInt64
  }

  /// A write in flight, or one whose outcome is unknown.
  private struct SentWrite {
    let id: UInt64
    let coversThrough: UInt64
    let value: KeyValue
    let data: Data
    /// The version the write makes if the broker applies it.
    let version: UInt64
    /// When it went out.
    let sentAt: Moment
  }

  let key: String
  /// The key's place in its client's machine.
  let index: Int
  /// Tells this key's slot from an earlier one of the same key (declared with another value
  /// type): mail of the earlier one is not for this machine.
  let epoch: UInt64
  /// This client's id, which tells its own writes from others' on the PUB stream.
  private let clientID: String
  /// How long a question or a refused write waits before it is tried again.
  private let retryInterval: Duration
  private let maxWindow: Int
  /// The value the key was declared with: the shared one while the broker holds none.
  private let initialValue: KeyValue

  private(set) var phase = KeyPhase.idle
  /// The local value: confirmed + pending, as the key's slot shows it once brought up to date
  /// (``rebaseDue()``).
  private(set) var local: KeyValue
  private(set) var loadError: (any Error)?
  private(set) var saveError: (any Error)?
  /// A snapshot arrived, and no reload was asked for since.
  private(set) var hasSnapshot = false
  /// The local value or its errors changed without observers being told.
  private var unnotified = false

  /// The last value the broker confirmed that decoded.
  private(set) var confirmed: KeyValue
  /// The bytes of the newest confirmed value, if known (the copy a `SEED` offers).
  private(set) var confirmedData: Data?
  /// `confirmedData` is newer than `confirmed` and not decoded yet.
  private(set) var undecoded = false
  /// The version of the newest confirmed value, on the broker run `instance` (versions count
  /// per run).
  private(set) var version: UInt64 = 0
  private(set) var instance: String?
  /// `local` is stale: confirmed changed under the pending mutations.
  private(set) var needsRebase = false
  /// The sequence after the newest mutation `local` includes; those after `confirmedThrough`
  /// are pending.
  private var nextSequence: UInt64 = 1
  /// The newest sequence the broker confirmed.
  private(set) var confirmedThrough: UInt64 = 0
  /// Writes in flight, oldest first. Kept across a lost connection until the next snapshot,
  /// whose `lastWrite` tells which of them the broker applied.
  private var sent: [SentWrite] = []
  /// Writes that were in flight when a broker answered without them: another broker of a
  /// cluster, or a copy of an earlier run adopted later, may still hold them, in id order.
  private var unresolved: [SentWrite] = []
  /// Questions (`GET`, `SEED`) asked since the key last took a snapshot.
  private var questions = 0
  /// Answers still to come to questions asked before the key last took a snapshot.
  private var staleAnswers = 0
  /// The writes seen applied, for a copy offered to a broker that lost the key.
  private var writers = RecentWriters()
  /// The broker has not refused this client's copies of the key (its key may not write it).
  private var mayOfferCopies = true
  /// The latest question offered this client's copy (`SEED`) rather than asking (`GET`).
  private var offeredCopy = false
  /// Mutations refused since the last event: their sequences, for the key's slot to drop.
  private var refusedNow: ClosedRange<UInt64>?

  /// Whether `error` is the broker's refusal to this client's key.
  static func isForbidden(_ error: (any Error)?) -> Bool {
    (error as? BrokerError)?.code == .refused(.forbidden)
  }

  init(
    key: String, index: Int, epoch: UInt64, clientID: String, initialValue: KeyValue,
    retryInterval: Duration, maxWritesInFlight: Int
  ) {
    self.key = key
    self.index = index
    self.epoch = epoch
    self.clientID = clientID
    self.retryInterval = retryInterval
    self.maxWindow = maxWritesInFlight
    self.initialValue = initialValue
    confirmed = initialValue
    local = initialValue
  }

  /// Mutations the broker has not confirmed.
  var hasUnconfirmedWrites: Bool { nextSequence - 1 > confirmedThrough }
  /// How many mutations the broker has not confirmed.
  var unconfirmedWriteCount: Int { Int(nextSequence - 1 - confirmedThrough) }
  /// How many writes await the broker's answer.
  var writesInFlight: Int { sent.count }
  /// In sync with the broker this client is connected to.
  var isSynced: Bool { isSyncedPhase && hasSnapshot }
  /// The confirmed version, for a `PING`, while in sync.
  var heldVersion: UInt64? { isSyncedPhase ? version : nil }

  private var isSyncedPhase: Bool {
    if case .synced = phase { true } else { false }
  }

  /// Holds the writes back for the retry interval, if the key is synced.
  private mutating func retryWrites(after now: Moment) {
    let retry = now + retryInterval
    whileSynced { $0.retryAfter = retry }
  }

  /// Changes the synced phase's state, if the key is synced.
  private mutating func whileSynced(_ change: (inout SyncedState) -> Void) {
    guard case .synced(var state) = phase else { return }
    change(&state)
    phase = .synced(state)
  }

  /// When the key next wants a ``KeyEvent/tick(at:instance:)``, if it waits for one.
  var deadline: Moment? {
    switch phase {
    case .probing(let next, _):
      return next
    case .snapshotting(let sent):
      return sent + retryInterval
    case .synced(let state):
      return state.retryAfter
    case .idle:
      return nil
    }
  }

  // MARK: - Mutations

  /// Hears of the user's mutation `sequence`, which made `value` the slot's local value. It
  /// stays pending until confirmed. One a rebase already included (its sequence is not after
  /// the newest one ``local`` includes) is no news. While a rebase is due, the value was
  /// computed on the old base: the rebase replaces it.
  private mutating func record(_ sequence: UInt64, _ value: KeyValue) {
    guard sequence >= nextSequence else { return }
    nextSequence = sequence + 1
    local = value
  }

  // MARK: - Rebases

  /// If the confirmed value changed under pending mutations (or new bytes wait to be decoded),
  /// what bringing the local value up to date needs: the caller decodes, re-applies the
  /// mutations after `confirmedThrough` from the key's slot, and hands the result to
  /// ``KeyEvent/rebased(_:)``.
  func rebaseDue() -> Rebase? {
    guard needsRebase else { return nil }
    return Rebase(
      key: index, undecoded: undecoded ? confirmedData : nil, confirmed: confirmed,
      confirmedThrough: confirmedThrough)
  }

  /// Whether this client's own update of `write` at `version` would change nothing: the key
  /// holds that version or a newer one, this client is its latest writer at that write or
  /// later, and nothing waits for the next event (as when a `REJECT` or a snapshot settled the
  /// write first).
  func isSettledOwnUpdate(version: UInt64, write: UInt64) -> Bool {
    version <= self.version && !needsRebase && !unnotified
      && writers.isLatest(clientID, atLeast: write)
  }

  /// Takes a rebase's result, which the slot shows already: the local value, including the
  /// mutations through `through` (some of which the mailbox may not have brought yet).
  private mutating func rebased(_ result: Rebased) {
    guard needsRebase else { return }
    if let decoded = result.decoded {
      let hadError = loadError != nil
      switch decoded {
      case .success(let value):
        confirmed = value
        loadError = nil
      case .failure(let error):
        // Keep the last good value; the next write of ours replaces the bad one.
        loadError = BrokerError(
          .undecodableValue, key: key,
          "The broker's value for \"\(key)\" is not a \(confirmed.typeName): \(error)")
      }
      undecoded = false
      // Observers show the error next to the value: its coming and going is news to them too.
      if hadError != (loadError != nil) { unnotified = true }
    }
    needsRebase = false
    nextSequence = max(nextSequence, result.through + 1)
    if result.local != local { unnotified = true }
    local = result.local
  }

  /// Whether the local value or its errors changed without observers being told; they are
  /// about to be.
  private mutating func takeUnnotified() -> Bool {
    guard unnotified else { return false }
    unnotified = false
    return true
  }

  // MARK: - Events

  mutating func handle(_ event: consuming KeyEvent) -> KeyOutput {
    var output = KeyOutput()
    switch consume event {
    case .connected(let now):
      phase = .probing(next: now, backoff: ClientMachine.firstRetry)
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
        let backoff = min(backoff * 2, retryInterval)
        phase = .probing(next: now + backoff, backoff: backoff)
      case .snapshotting(let sent) where now - sent >= retryInterval:
        output.send = askForState(at: now, instance: instance)
      case .synced(var state) where state.retryAfter.map { now >= $0 } ?? false:
        // Writes may go out again (the flush that follows sends them).
        state.retryAfter = nil
        state.refusesWrites = false
        phase = .synced(state)
      default:
        break
      }
    case .received(let message, let now, let instance):
      output = receive(message, at: now, instance: instance)
    case .brokerHolds(let version, let now, let instance):
      // A write in flight learns the version from its update, unless the PUB socket dropped
      // it: the update of a write sent a retry interval ago is taken to be lost.
      if isSyncedPhase, self.version < version,
        sent.first.map({ now - $0.sentAt >= retryInterval }) ?? true
      {
        output.send = askForState(at: now, instance: instance)
      }
    case .reload(let now, let instance):
      // Not in sync until the next snapshot, so a wait cannot end on the old one.
      if hasSnapshot { unnotified = true }
      hasSnapshot = false
      if isSyncedPhase, let instance { output.send = askForState(at: now, instance: instance) }
    case .mutated(let sequence, let value):
      record(sequence, value)
    case .rebased(let result):
      rebased(result)
    case .flush(let id, let now):
      output.encode = flush(id: id, at: now)
    case .encoded(let request, let result, let now, let maxValueSize):
      (output.send, output.usedID) = encoded(
        request, result, at: now, maxValueSize: maxValueSize)
      output.progressed = output.sends || output.usedID
    }
    output.deadline = deadline
    output.refused = refusedNow
    refusedNow = nil
    output.changed = takeUnnotified()
    output.rebase = needsRebase
    return output
  }

  // MARK: - Messages

  private mutating func receive(
    _ message: BrokerMessage, at now: Moment, instance: String?
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
      if Self.isForbidden(loadError) {
        loadError = nil
        unnotified = true
      }
      take(version: version, lastWrite: lastWrite, value: value, writes: writes, instance: instance)
      phase = .synced(SyncedState())
      // Readers show whether the key is loaded: its coming is news to them.
      if !hasSnapshot { unnotified = true }
      hasSnapshot = true
      staleAnswers = max(0, questions - 1)
      questions = 0
      output.progressed = true
    case .error(let code, let text, _, 0):
      // A question answered "ask again later" (a broker collecting copies after a restart), or
      // refused to this client's key: asked again after the retry interval, so that a
      // permission granted meanwhile takes effect. A refused copy is not offered in the next
      // question: that is a `GET`, which a key that may read but not write is answered; nor is
      // it a refused read (the `GET` tells whether the key may be read). A broker still
      // collecting copies wants this one: offered again, as a permission granted since the
      // refusal lets it be adopted.
      if code == .seeding { mayOfferCopies = true }
      if code == .forbidden, offeredCopy {
        mayOfferCopies = false
      } else if code == .forbidden {
        if !Self.isForbidden(loadError) { unnotified = true }
        loadError = BrokerError(
          .refused(.forbidden), key: key, "The broker refused to read \"\(key)\" (forbidden): \(text)")
        output.progressed = true
      }
      if staleAnswers > 0 {
        staleAnswers -= 1
      } else if case .snapshotting = phase {
        questions = max(0, questions - 1)
      }
    case .ack(_, let write, let version):
      guard isSyncedPhase, settle(write, version: version) else { break }
      writers.record(clientID, write: write)
      output.progressed = true
    case .reject(_, let write, let version, let lastWrite, let value, let writes):
      // The writes behind it are doomed (each is chained to it): their answers are ignored.
      guard isSyncedPhase, sent.contains(where: { $0.id == write }), let instance else { break }
      whileSynced { $0.window = 1 }
      take(version: version, lastWrite: lastWrite, value: value, writes: writes, instance: instance)
      output.progressed = true
    case .error(let code, let text, _, let write?):
      guard isSyncedPhase, sent.contains(where: { $0.id == write }) else { break }
      // Nothing in flight was applied (a storage failure, or a broker collecting copies after
      // a restart); all of it is retried after the retry interval, unless this client's key
      // may not write the key: retrying cannot change that, so the mutations are refused.
      sent = []
      retryWrites(after: now)
      if code != .seeding { refused(code, text) }
      if code == .forbidden {
        whileSynced { $0.refusesWrites = true }
        refusePending()
      }
      output.progressed = true
    case .update(_, let version, let writer, let write, let value):
      (output.send, output.progressed) = update(
        version: version, writer: writer, write: write, value: value, at: now, instance: instance)
    default:
      break
    }
    return output
  }

  /// An update from the PUB socket; returns the question to ask when versions were skipped, and
  /// whether anything a waiter looks at changed.
  private mutating func update(
    version: UInt64, writer: String, write: UInt64, value: Data, at now: Moment,
    instance: String?
  ) -> (ask: BrokerMessage?, progressed: Bool) {
    // Taken only from the run whose snapshot this client holds (an update of another run may
    // arrive first on the SUB socket after a restart).
    guard let instance, instance == self.instance else { return (nil, false) }
    // A writer is recorded only with a value that includes its write: a copy offered with the
    // record but not the write would make the writer drop a mutation the broker never got.
    // Nothing a waiter looks at changes: this may be a writer's own update that an answer
    // settled first, which would otherwise publish and wake every waiter once more.
    guard version > self.version else {
      if write > 0 { writers.record(writer, write: write) }
      return (nil, false)
    }
    // Our own write coming back: its value is the one we encoded, no need to decode it (the
    // same assumption an ACK makes), which keeps the writer's CPU free for readers.
    if writer == clientID, settle(write, version: version) {
      writers.record(writer, write: write)
      return (nil, true)
    }
    // Updates were dropped (the value would include writes whose writers this client did not
    // see), or an adopted copy may hold writes of ours that no answer accounted for yet: a
    // snapshot brings the value with its writers.
    if hasSnapshot && version > self.version + 1 || write == 0 && !unresolved.isEmpty {
      return (isSyncedPhase ? askForState(at: now, instance: instance) : nil, true)
    }
    if write > 0 { writers.record(writer, write: write) }
    if writer == clientID { acknowledge(applied: write) }
    accept(version: version, value: value)
    return (nil, true)
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
    // The pending mutations go on top of this value.
    needsRebase = true
  }

  /// Asks for the key's state: with `GET`, or, to a broker run other than the one that
  /// confirmed this client's copy (which may have lost it), by offering that copy (`SEED`).
  private mutating func askForState(at now: Moment, instance: String)
    -> BrokerMessage
  {
    phase = .snapshotting(sent: now)
    questions += 1
    offeredCopy = false
    if mayOfferCopies, let origin = self.instance, origin != instance, version > 0,
      let copy = confirmedData
    {
      offeredCopy = true
      return .seed(
        client: clientID, key: key, origin: origin, version: version, value: copy,
        writes: writers.writes
      )
    }
    return .get(client: clientID, key: key)
  }

  // MARK: - Writes

  /// If a write may go out, asks for the local value's encoding, as the write `id`.
  private mutating func flush(id: UInt64, at now: Moment) -> Encode? {
    guard case .synced(var state) = phase, sent.count < state.window ?? maxWindow,
      hasUnconfirmedWrites, nextSequence - 1 > sent.last?.coversThrough ?? confirmedThrough
    else { return nil }
    if let retry = state.retryAfter {
      guard now >= retry else {
        // Refused at once, rather than left pending: the broker refused the last ones.
        if state.refusesWrites { refusePending() }
        return nil
      }
      state.retryAfter = nil
      state.refusesWrites = false
      phase = .synced(state)
    }
    // Computed on an older confirmed value, the local one would undo that value's writes: the
    // write goes out once the rebase is done.
    guard !needsRebase else { return nil }
    return Encode(key: index, id: id, value: local, coversThrough: nextSequence - 1)
  }

  /// Takes the encoding ``KeyEvent/flush(id:at:)`` asked for, which its owner makes before any other
  /// event: the write to send, if any; the id is used unless the answer is `nil` and the key
  /// lost its sync meanwhile.
  private mutating func encoded(
    _ request: Encode, _ result: Result<Data, any Error>, at now: Moment,
    maxValueSize: UInt64?
  ) -> (send: BrokerMessage?, usedID: Bool) {
    guard isSyncedPhase else { return (nil, false) }
    let data: Data
    switch result {
    case .success(let bytes):
      data = bytes
    case .failure(let error):
      failed(
        BrokerError(
          .unencodableValue, key: key, "The value of \"\(key)\" cannot be encoded: \(error)"))
      retryWrites(after: now)
      return (nil, false)
    }
    if let maxValueSize, data.count > maxValueSize {
      // What the broker would answer, without the round trip; retried like its answer.
      retryWrites(after: now)
      refused(
        .tooLarge, "value of \(data.count) bytes exceeds the broker's limit of \(maxValueSize)")
      return (nil, true)
    }
    let previous = sent.last
    let base = previous?.version ?? version
    sent.append(
      SentWrite(
        id: request.id, coversThrough: request.coversThrough, value: request.value, data: data,
        version: base + 1, sentAt: now))
    let write = BrokerMessage.write(
      client: clientID, write: request.id, key: key, base: base, value: data, after: previous?.id,
      quiet: true)
    return (write, true)
  }

  /// Drops the pending mutations this machine knows of: the broker refused to let this client
  /// write the key. The local value goes back to the confirmed one (with the mutations the
  /// rebase finds in the slot that this machine has not heard of yet, still pending).
  private mutating func refusePending() {
    guard hasUnconfirmedWrites else { return }
    let first = confirmedThrough + 1
    let through = nextSequence - 1
    refusedNow = (refusedNow?.lowerBound ?? first)...through
    confirmedThrough = through
    needsRebase = true
  }

  /// The broker refused the writes in flight (or would have); they stay pending, unless the
  /// refusal is `forbidden`.
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
      confirmedData = own.data
      self.version = version
      undecoded = false
      loadError = nil
    }
    saveError = nil
    acknowledge(through: own.coversThrough)
    sent.removeFirst(index + 1)
    // The broker's record of our last write is now past them: they can never apply.
    if let newest = unresolved.lastIndex(where: { $0.id < write }) {
      unresolved.removeFirst(newest + 1)
    }
    let maxWindow = maxWindow
    whileSynced { state in
      if let narrowed = state.window {
        state.window = narrowed + 1 >= maxWindow ? nil : narrowed + 1
      }
    }
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
    confirmedThrough = max(confirmedThrough, min(sequence, nextSequence - 1))
  }

  private mutating func accept(version: UInt64, value: Data) {
    self.version = version
    needsRebase = true
    guard !value.isEmpty else {
      // The broker holds no value: the key was never written, or a new run lost it and took no
      // copy. The declared value is the shared one then, not a copy this client may not offer.
      if loadError != nil { unnotified = true }
      confirmed = initialValue
      confirmedData = nil
      undecoded = false
      loadError = nil
      return
    }
    confirmedData = value
    undecoded = true
  }
}

/// What happens to a key, as its ``KeyMachine`` hears of it.
enum KeyEvent {
  /// A connection to the broker is up (again): start over with `SYNC`.
  case connected(at: Moment)
  /// The connection is down, or answers as another broker run: wait for the next handshake.
  case disconnected
  /// The DEALER's connection was lost: nothing asked on it will be answered.
  case connectionLost
  /// Time passed.
  case tick(at: Moment, instance: String)
  /// A reply or a published message about this key, from the broker run `instance` (`nil`
  /// while the loop does not know which run it talks to).
  case received(BrokerMessage, at: Moment, instance: String?)
  /// The broker holds the key at `version` (a `PONG`), which may show updates were dropped.
  case brokerHolds(version: UInt64, at: Moment, instance: String)
  /// Someone asked for a fresh snapshot: not in sync until it comes, and asked for at once
  /// while connected to the broker run `instance`.
  case reload(at: Moment, instance: String?)
  /// The user's mutation `sequence` made `value` the key's local value, as its slot shows it.
  case mutated(sequence: UInt64, value: KeyValue)
  /// A rebase's result, which the key's slot shows already (``KeyMachine/rebaseDue()``).
  case rebased(KeyMachine.Rebased)
  /// Writes may go out, the first as the write `id`: the output asks for an encoding.
  case flush(id: UInt64, at: Moment)
  /// The encoding the last flush asked for, made before any other event.
  case encoded(
    KeyMachine.Encode, Result<Data, any Error>, at: Moment,
    maxValueSize: UInt64?)
}

/// What the ``ClientMachine`` must do after a ``KeyEvent``: the one shape every event returns.
struct KeyOutput {
  /// A message for the broker.
  var send: BrokerMessage?
  /// A write's value to encode, and hand back as ``KeyEvent/encoded(_:_:at:maxValueSize:)``.
  var encode: KeyMachine.Encode?
  /// The flush's write id was used (by a write sent, or one refused before sending).
  var usedID = false
  /// Waiters (for a confirmation, for the sync) may want to look again.
  var progressed = false
  /// When the key next wants a tick, if it waits for one (only events change it).
  var deadline: Moment?
  /// The local value's errors changed: the observers must be told.
  var changed = false
  /// The local value is stale: a rebase is due.
  var rebase = false
  /// The sequences of the mutations the broker refused (`forbidden`): the key's slot drops
  /// them as refused, and the rebase leaves them out.
  var refused: ClosedRange<UInt64>?

  /// Whether there is a message for the broker. `send != nil` would pick `Optional`'s `!=` for
  /// `Equatable` values: a copy of the message, and a comparison.
  var sends: Bool {
    if case .some = send { true } else { false }
  }

  /// Whether there is a value to encode (see ``sends``).
  var encodes: Bool {
    if case .some = encode { true } else { false }
  }
}

/// Where a key stands with the broker, per connection, with what only that phase needs.
enum KeyPhase: Equatable {
  /// Not connected: nothing is sent.
  case idle
  /// `SYNC` goes out at `next`, then at a doubling interval up to the retry interval.
  case probing(next: Moment, backoff: Duration)
  /// `GET` or `SEED` went out at `sent`; asked again after the retry interval.
  case snapshotting(sent: Moment)
  /// In sync: writes go out.
  case synced(SyncedState)
}

/// How a synced key's writes go out; a new sync starts afresh.
struct SyncedState: Equatable {
  /// How many writes may be in flight (`nil`: the maximum).
  var window: Int?
  /// Writes wait until then: the broker refused the last ones, or would have.
  var retryAfter: Moment?
  /// The last writes were refused as `forbidden`: until `retryAfter`, mutations are refused
  /// here at once; the first one after it goes to the broker, so a permission granted
  /// meanwhile takes effect.
  var refusesWrites = false
}
