import Foundation

extension BrokerMachine {
  /// One key: its confirmed entry, and the batch being stored with the requests waiting for it.
  struct KeyState {
    var entry: BrokerEntry?
    /// The cluster's revision of the entry (0: absent, and always 0 for the log).
    var revision: Int64 = 0
    /// For a key that has only clients' copies so far (no write applied in this run, or in a
    /// cluster ever): the copy a newer one must beat.
    var seeded: SeedOrigin?
    /// The batch being stored.
    var flight: Batch?
    /// Requests that arrived while `flight` was out, decided when it is answered.
    var queued: [KeyRequest] = []
    /// The newest record the watch brought while `flight` was out.
    var watched: StoredRecord?

    mutating func apply(_ changes: [Change], instance: String) {
      guard !changes.isEmpty else { return }
      if entry == nil { entry = .empty }
      for change in changes {
        BrokerMachine.apply(change, to: &entry!, seeded: &seeded, instance: instance)
      }
    }
  }

  /// A request on one key, waiting for its answer's place in its connection's order.
  struct KeyRequest {
    enum Kind {
      case write(write: UInt64, base: UInt64, value: Data, after: UInt64?)
      case get
      /// `fits`: whether the value is within the broker's limit.
      case seed(origin: SeedOrigin, value: Data, writes: [String: UInt64], fits: Bool)
    }

    let peer: Data
    let client: String
    let now: Duration
    let kind: Kind
    var ticket: ConnectionReplies.Ticket?
  }

  /// Requests decided together and stored with one commit, with what goes out once it is.
  struct Batch {
    var requests: [KeyRequest]
    var commit: Commit
    /// The commit's name in a cluster's record (empty for the log, which needs none).
    var name: String
    /// How often the key had changed under the batch.
    var attempts = 0
    /// Whether a commit of this very record went unanswered: it may still be stored, so the
    /// batch is never given up, only sent again.
    var inDoubt = false
    /// What the batch does to the key, in order.
    var changes: [Change] = []
    /// For a cluster: the entry after the changes.
    var entry: BrokerEntry?
    var seeded: SeedOrigin?
    var releases: [Release] = []
    var applied = 0
    var rejected = 0
    var adopted = 0
  }

  enum Change {
    case applied(BrokerEntry.Applied, Data)
    /// A refused copy's write records, merged in.
    case merged([String: UInt64])
    case adopted(SeedOrigin, version: UInt64, value: Data, writes: [String: UInt64])
    /// A cluster's batch: when its clients last wrote or were heard, and the clients forgotten.
    case stamped([String: Int64], at: Int64, forgettingBefore: Int64)
  }

  enum Release {
    case publish(BrokerMessage)
    case answer(Int, BrokerMessage?)
    case report(Report)
  }

  /// Runs `body` on a key's state in place: reading a field through the dictionary's getter
  /// copies the whole state first, its batch and queue with it.
  static func inPlace<Result>(_ state: inout KeyState, _ body: (inout KeyState) -> Result) -> Result
  {
    body(&state)
  }

  /// Runs `body` in place on the state of `key`, which must be held: through its index, since
  /// `keys[key]!` moves the state out and back, copying it.
  mutating func inPlace<Result>(key: String, _ body: (inout KeyState) -> Result) -> Result {
    body(&keys.values[keys.index(forKey: key)!])
  }

  // MARK: - Batches

  mutating func enqueue(_ request: KeyRequest, on key: String, into actions: inout [Action]) {
    var request = request
    request.ticket = replies.reserve(request.peer)
    if let index = keys.index(forKey: key) {
      let idle = Self.inPlace(&keys.values[index]) { state in
        state.queued.append(request)
        return state.flight == nil
      }
      guard idle else { return }
    } else {
      keys[key] = KeyState(queued: [request])
    }
    startBatch(key, into: &actions)
  }

  /// Decides the requests queued on `key` and sends them to be stored.
  private mutating func startBatch(_ key: String, into actions: inout [Action]) {
    guard let index = keys.index(forKey: key) else { return }
    let requests = Self.inPlace(&keys.values[index]) { state in
      defer { state.queued = [] }
      return state.queued
    }
    guard !requests.isEmpty else { return }
    var batch = decide(requests, on: key, attempts: 0)
    // What writes nothing to the log (a read) needs no store: it is answered at once.
    if backend == .log, batch.commit.log.isEmpty {
      finish(&batch, on: key, at: 0, into: &actions)
      return
    }
    keys.values[index].flight = batch
    flights[batch.commit.token] = key
    actions.append(.commit(batch.commit))
  }

  /// Takes a commit's outcome.
  mutating func committed(_ token: UInt64, _ outcome: CommitOutcome) -> [Action] {
    var actions: [Action] = []
    take(outcome, of: token, into: &actions)
    return actions
  }

  private mutating func take(
    _ outcome: CommitOutcome, of token: UInt64, into actions: inout [Action]
  ) {
    // Taken out of the key's state, not copied: every way out below puts it back or ends it.
    guard let key = flights.removeValue(forKey: token), let index = keys.index(forKey: key),
      var batch = Self.inPlace(
        &keys.values[index],
        { state in
          state.flight?.commit.token == token ? state.flight.take() : nil
        })
    else { return }
    switch outcome {
    case .stored(let revision):
      finish(&batch, on: key, at: revision, into: &actions)
    case .changed(let current?) where current.record.commit == batch.name:
      // An unanswered commit of this very record was stored: this is its answer.
      finish(&batch, on: key, at: current.revision, into: &actions)
    case .changed(let current):
      absorb(current, into: key, &actions, deleted: current == nil)
      guard batch.attempts + 1 < Self.maxAttempts else {
        fail(batch, on: key, "the key kept changing in the shared store", into: &actions)
        return
      }
      var again = decide(batch.requests, on: key, attempts: batch.attempts + 1)
      again.inDoubt = false
      inPlace(key: key) { $0.flight = again }
      flights[again.commit.token] = key
      actions.append(.commit(again.commit))
    case .refused(let reason) where !batch.inDoubt:
      fail(batch, on: key, reason, into: &actions)
    case .refused(let reason), .unanswered(let reason):
      // Maybe stored: nothing about the key is answered until the same commit, sent again,
      // is answered. Comparing the same revision, only one of the two can ever apply.
      if !batch.inDoubt {
        statistics.storageErrors += 1
        actions.append(.report(.commitUnanswered(key: key, reason: reason)))
      }
      batch.inDoubt = true
      inPlace(key: key) { $0.flight = batch }
      retries[key] = now + Self.retryDelay
    }
  }

  /// Sends again a commit that went unanswered, under a new token.
  mutating func resend(_ key: String, into actions: inout [Action]) {
    guard var batch = keys[key]?.flight else { return }
    nextToken += 1
    batch.commit = Commit(
      token: nextToken, key: key, revision: batch.commit.revision, record: batch.commit.record,
      log: batch.commit.log)
    inPlace(key: key) { $0.flight = batch }
    flights[nextToken] = key
    actions.append(.commit(batch.commit))
  }

  /// The batch is stored: makes its changes the key's confirmed state and lets its answers out.
  private mutating func finish(
    _ batch: inout Batch, on key: String, at revision: Int64, into actions: inout [Action]
  ) {
    let (backend, instance) = (backend, instance)
    let added = inPlace(key: key) { state in
      let had = state.entry != nil
      switch backend {
      case .log:
        // In place: the entry's per-client map is not copied on every write.
        state.apply(batch.changes, instance: instance)
      case .cluster:
        if batch.commit.record != nil {
          state.entry = batch.entry
          state.seeded = batch.seeded
        }
        state.revision = revision
      }
      state.flight = nil
      return !had && state.entry != nil
    }
    if added { statistics.keys += 1 }
    release(&batch, on: key, into: &actions)
    afterFlight(key, into: &actions)
  }

  /// Nothing of the batch was stored: its writes are refused, its copies left unanswered (the
  /// clients offer them again). A write the key's confirmed entry shows applied is rejected as
  /// such: `storage` would tell its client to send its mutations again.
  private mutating func fail(
    _ batch: Batch, on key: String, _ reason: String, into actions: inout [Action]
  ) {
    actions.append(.report(.storageFailed(key: key, reason: reason)))
    let entry = keys[key]?.entry
    for request in batch.requests {
      let answer: BrokerMessage?
      switch request.kind {
      case .write(let write, let base, _, _):
        let lastWrite = entry?.lastWrites[request.client] ?? 0
        if let entry, write <= lastWrite {
          statistics.writesRejected += 1
          answer = .reject(
            key: key, write: write, version: entry.version, lastWrite: lastWrite,
            value: entry.value, writes: entry.writes(after: base))
          break
        }
        statistics.storageErrors += 1
        answer = .error(code: .storage, message: reason, key: key, write: write)
      case .get:
        answer = .error(code: .storage, message: reason, key: key, write: 0)
      case .seed:
        statistics.storageErrors += 1
        answer = nil
      }
      if let ticket = request.ticket { replies.answer(ticket, with: answer, into: &actions) }
    }
    inPlace(key: key) { $0.flight = nil }
    afterFlight(key, into: &actions)
  }

  private mutating func afterFlight(_ key: String, into actions: inout [Action]) {
    // Hashing the key costs more than asking whether any commit waits to be sent again.
    if !retries.isEmpty { retries[key] = nil }
    let (watched, waiting) = inPlace(key: key) { ($0.watched.take(), !$0.queued.isEmpty) }
    if let watched { absorb(watched, into: key, &actions) }
    if waiting { startBatch(key, into: &actions) }
  }

  private mutating func release(_ batch: inout Batch, on key: String, into actions: inout [Action])
  {
    statistics.writesApplied += batch.applied
    statistics.writesRejected += batch.rejected
    statistics.seedsAdopted += batch.adopted
    for release in batch.releases {
      switch release {
      case .publish(let message): actions.append(.publish(message))
      case .report(let report): actions.append(.report(report))
      case .answer(let index, let message):
        if let ticket = batch.requests[index].ticket {
          replies.answer(ticket, with: message, into: &actions)
        }
      }
    }
  }

  /// Takes a cluster's record of a key if it is newer than the entry held, and publishes it.
  mutating func absorb(
    _ stored: StoredRecord?, into key: String, _ actions: inout [Action], deleted: Bool = false
  ) {
    guard let stored else {
      // Deleted from the store by hand: the key starts over.
      guard deleted, keys[key]?.entry != nil else { return }
      keys[key]!.entry = nil
      keys[key]!.seeded = nil
      keys[key]!.revision = 0
      statistics.keys -= 1
      return
    }
    let before = Self.inPlace(&keys[key, default: KeyState()]) {
      state -> (had: Bool, version: UInt64)? in
      guard stored.revision > state.revision else { return nil }
      defer {
        state.entry = stored.record.entry
        state.seeded = stored.record.adoptedFrom
        state.revision = stored.revision
      }
      return (state.entry != nil, state.entry?.version ?? 0)
    }
    guard let (had, previous) = before else { return }
    if !had { statistics.keys += 1 }
    let entry = stored.record.entry
    guard entry.version > previous else { return }
    actions.append(
      .publish(
        .update(
          key: key, version: entry.version, client: stored.record.client,
          write: stored.record.write, value: entry.value)))
  }
}
