import Foundation

extension BrokerMachine {
  /// One key: its confirmed entry, and the batch being stored with the requests waiting for it.
  struct KeyState {
    let key: String
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

    /// Whether the key has an entry. `entry != nil` would compare the entries as `Equatable`
    /// values, a copy of the entry and a call of `==` each time.
    var hasEntry: Bool {
      if case .some = entry { true } else { false }
    }

    mutating func apply(_ changes: [Change], instance: String) {
      guard !changes.isEmpty else { return }
      if !hasEntry { entry = .empty }
      for change in changes {
        BrokerMachine.apply(change, to: &entry!, seeded: &seeded, instance: instance)
      }
    }
  }

  /// A request on one key, waiting for its answer's place in its connection's order.
  struct KeyRequest {
    enum Kind {
      /// `quiet`: applied, it is answered by its update alone.
      case write(write: UInt64, base: UInt64, value: Data, after: UInt64?, quiet: Bool)
      case get
      /// `fits`: whether the value is within the broker's limit.
      case seed(origin: SeedOrigin, value: Data, writes: [String: UInt64], fits: Bool)
    }

    let peer: Data
    let client: String
    let now: Duration
    let kind: Kind
    /// Its place in its connection's order of answers; `nil` for the log, whose commits are
    /// answered before the next request is read, so its answers go out in order at once.
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

  /// Runs `body` on a key's state in place: reading a field of the state through a getter
  /// copies the whole state first, its batch and queue with it.
  static func inPlace<Result>(_ state: inout KeyState, _ body: (inout KeyState) -> Result) -> Result
  {
    body(&state)
  }

  /// The place of `key` in ``states``, made for it if it has none.
  mutating func slot(_ key: String) -> Int {
    if let slot = slots[key] { return slot }
    states.append(KeyState(key: key))
    slots[key] = states.count - 1
    return states.count - 1
  }

  /// The state of `key`, if the broker has one.
  func state(of key: String) -> KeyState? { slots[key].map { states[$0] } }

  // MARK: - Batches

  mutating func enqueue(_ request: KeyRequest, on key: String, into actions: inout [Action]) {
    var request = request
    if backend == .cluster { request.ticket = replies.reserve(request.peer) }
    let slot = slot(key)
    // In memory no batch is ever out (each is final once decided), so a write is judged and
    // applied on its own, with none of a batch's lists.
    if backend == .memory,
      case .write(let write, let base, let value, let after, let quiet) = request.kind
    {
      writeInMemory(
        request, write: write, base: base, value: value, after: after, quiet: quiet, on: slot,
        into: &actions)
      return
    }
    let idle = Self.inPlace(&states[slot]) { state in
      state.queued.append(request)
      return state.flight == nil
    }
    guard idle else { return }
    startBatch(slot, into: &actions)
  }

  /// Applies a write to a key held in memory, or answers why not, as a batch of that one write
  /// would.
  private mutating func writeInMemory(
    _ request: KeyRequest, write: UInt64, base: UInt64, value: Data, after: UInt64?,
    quiet: Bool, on slot: Int, into actions: inout [Action]
  ) {
    let (instance, seedWindow) = (instance, seedWindow)
    let seeding = request.now < seedWindow
    // Judged and applied in the key's state in place: reading its fields one by one would copy
    // the whole state each time.
    let (key, verdict, added) = Self.inPlace(&states[slot]) {
      state -> (String, WriteVerdict, Bool) in
      func judged(on entry: BrokerEntry, present: Bool) -> WriteVerdict {
        Self.judge(
          write: write, base: base, after: after, by: request.client, on: state.key, entry,
          present: present, seeded: state.seeded, seeding: seeding, attempts: 0,
          instance: instance, seedWindow: seedWindow)
      }
      // The entry passed where it is: unwrapping it into a variable would copy it.
      let verdict =
        state.hasEntry
        ? judged(on: state.entry!, present: true) : judged(on: .empty, present: false)
      guard case .apply(let applied) = verdict else { return (state.key, verdict, false) }
      let added = !state.hasEntry
      if added { state.entry = .empty }
      state.entry!.apply(applied, value: value, instance: instance)
      state.seeded = nil
      return (state.key, verdict, added)
    }
    switch verdict {
    case .apply(let applied):
      if added { statistics.keys += 1 }
      statistics.writesApplied += 1
      // Publish first, as a batch does: propagation matters more than the writer's ACK.
      actions.append(
        .publish(
          .update(
            key: key, version: applied.version, client: request.client, write: write,
            value: value)))
      answer(
        request, with: quiet ? nil : .ack(key: key, write: write, version: applied.version),
        into: &actions)
    case .seeding(let refusal):
      statistics.seedingRefusals += 1
      answer(request, with: refusal, into: &actions)
    case .reject(let rejection):
      statistics.writesRejected += 1
      answer(request, with: rejection, into: &actions)
    case .acknowledge(let ack):
      answer(request, with: ack, into: &actions)
    }
  }

  /// Decides the requests queued on the key in `slot` and sends them to be stored.
  private mutating func startBatch(_ slot: Int, into actions: inout [Action]) {
    var requests: [KeyRequest] = []
    swap(&requests, &states[slot].queued)
    guard !requests.isEmpty else { return }
    var batch = decide(requests, on: slot, attempts: 0)
    // What writes nothing to the log (a read, or anything in memory alone) needs no store: it
    // is answered at once.
    if backend != .cluster, batch.commit.log.isEmpty {
      finish(&batch, on: slot, at: 0, into: &actions)
      return
    }
    states[slot].flight = batch
    flights[batch.commit.token] = slot
    actions.append(.commit(batch.commit))
  }

  /// Takes a commit's outcome.
  mutating func committed(_ token: UInt64, _ outcome: CommitOutcome) -> [Action] {
    var actions: [Action] = []
    // A write's publication and answer: growing the list from empty would allocate twice.
    actions.reserveCapacity(2)
    take(outcome, of: token, into: &actions)
    return actions
  }

  private mutating func take(
    _ outcome: CommitOutcome, of token: UInt64, into actions: inout [Action]
  ) {
    // Taken out of the key's state, not copied: every way out below puts it back or ends it.
    guard let slot = flights.removeValue(forKey: token),
      var batch = Self.inPlace(
        &states[slot],
        { state in
          state.flight?.commit.token == token ? state.flight.take() : nil
        })
    else { return }
    let key = states[slot].key
    switch outcome {
    case .stored(let revision):
      finish(&batch, on: slot, at: revision, into: &actions)
    case .changed(let current?) where current.record.commit == batch.name:
      // An unanswered commit of this very record was stored: this is its answer.
      finish(&batch, on: slot, at: current.revision, into: &actions)
    case .changed(let current):
      absorb(current, into: slot, &actions, deleted: current == nil)
      guard batch.attempts + 1 < Self.maxAttempts else {
        fail(batch, on: slot, "the key kept changing in the shared store", into: &actions)
        return
      }
      var again = decide(batch.requests, on: slot, attempts: batch.attempts + 1)
      again.inDoubt = false
      states[slot].flight = again
      flights[again.commit.token] = slot
      actions.append(.commit(again.commit))
    case .refused(let reason) where !batch.inDoubt:
      fail(batch, on: slot, reason, into: &actions)
    case .refused(let reason), .unanswered(let reason):
      // Maybe stored: nothing about the key is answered until the same commit, sent again,
      // is answered. Comparing the same revision, only one of the two can ever apply.
      if !batch.inDoubt {
        statistics.storageErrors += 1
        actions.append(.report(.commitUnanswered(key: key, reason: reason)))
      }
      batch.inDoubt = true
      states[slot].flight = batch
      retries[slot] = now + Self.retryDelay
    }
  }

  /// Sends again a commit that went unanswered, under a new token.
  mutating func resend(_ slot: Int, into actions: inout [Action]) {
    guard var batch = states[slot].flight else { return }
    nextToken += 1
    batch.commit = Commit(
      token: nextToken, key: states[slot].key, revision: batch.commit.revision,
      record: batch.commit.record, log: batch.commit.log)
    states[slot].flight = batch
    flights[nextToken] = slot
    actions.append(.commit(batch.commit))
  }

  /// The batch is stored: makes its changes the key's confirmed state and lets its answers out.
  private mutating func finish(
    _ batch: inout Batch, on slot: Int, at revision: Int64, into actions: inout [Action]
  ) {
    let (backend, instance) = (backend, instance)
    let added = Self.inPlace(&states[slot]) { state in
      let had = state.hasEntry
      switch backend {
      case .log, .memory:
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
      return !had && state.hasEntry
    }
    if added { statistics.keys += 1 }
    release(&batch, into: &actions)
    afterFlight(slot, into: &actions)
  }

  /// Nothing of the batch was stored: its writes are refused, its copies left unanswered (the
  /// clients offer them again). A write the key's confirmed entry shows applied is rejected as
  /// such: `storage` would tell its client to send its mutations again.
  private mutating func fail(
    _ batch: Batch, on slot: Int, _ reason: String, into actions: inout [Action]
  ) {
    let key = states[slot].key
    actions.append(.report(.storageFailed(key: key, reason: reason)))
    let entry = states[slot].entry
    for request in batch.requests {
      let answer: BrokerMessage?
      switch request.kind {
      case .write(let write, let base, _, _, _):
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
      self.answer(request, with: answer, into: &actions)
    }
    states[slot].flight = nil
    afterFlight(slot, into: &actions)
  }

  private mutating func afterFlight(_ slot: Int, into actions: inout [Action]) {
    // Hashing costs more than asking whether any commit waits to be sent again.
    if !retries.isEmpty { retries[slot] = nil }
    let (watched, waiting) = Self.inPlace(&states[slot]) {
      ($0.watched.take(), !$0.queued.isEmpty)
    }
    if let watched { absorb(watched, into: slot, &actions) }
    if waiting { startBatch(slot, into: &actions) }
  }

  private mutating func release(_ batch: inout Batch, into actions: inout [Action]) {
    statistics.writesApplied += batch.applied
    statistics.writesRejected += batch.rejected
    statistics.seedsAdopted += batch.adopted
    for release in batch.releases {
      switch release {
      case .publish(let message): actions.append(.publish(message))
      case .report(let report): actions.append(.report(report))
      case .answer(let index, let message):
        answer(batch.requests[index], with: message, into: &actions)
      }
    }
  }

  /// Answers a request in its connection's order (`nil`: the request gets no answer).
  private mutating func answer(
    _ request: KeyRequest, with message: BrokerMessage?, into actions: inout [Action]
  ) {
    if let ticket = request.ticket {
      replies.answer(ticket, with: message, into: &actions)
    } else if let message {
      actions.append(.reply(peer: request.peer, message))
    }
  }

  /// Takes a cluster's record of a key if it is newer than the entry held, and publishes it.
  mutating func absorb(
    _ stored: StoredRecord?, into slot: Int, _ actions: inout [Action], deleted: Bool = false
  ) {
    guard let stored else {
      // Deleted from the store by hand: the key starts over.
      guard deleted, states[slot].hasEntry else { return }
      states[slot].entry = nil
      states[slot].seeded = nil
      states[slot].revision = 0
      statistics.keys -= 1
      return
    }
    let before = Self.inPlace(&states[slot]) {
      state -> (had: Bool, version: UInt64)? in
      guard stored.revision > state.revision else { return nil }
      defer {
        state.entry = stored.record.entry
        state.seeded = stored.record.adoptedFrom
        state.revision = stored.revision
      }
      return (state.hasEntry, state.entry?.version ?? 0)
    }
    guard let (had, previous) = before else { return }
    if !had { statistics.keys += 1 }
    let entry = stored.record.entry
    guard entry.version > previous else { return }
    actions.append(
      .publish(
        .update(
          key: states[slot].key, version: entry.version, client: stored.record.client,
          write: stored.record.write, value: entry.value)))
  }
}
