import Foundation

extension BrokerMachine {
  /// Decides `requests` in order on the key's confirmed state, each on the state the ones
  /// before it leave, into a batch to store.
  mutating func decide(_ requests: [KeyRequest], on slot: Int, attempts: Int) -> Batch {
    nextToken += 1
    let key = states[slot].key
    // Changed only where a later decision, or the cluster's record, needs the new state: the
    // log's single write is applied in place once stored, without copying the entry. Not
    // optional (`present` says whether the key has an entry): reading a field of an optional
    // entry copies all of it.
    var (working, present, seeded, revision) = Self.inPlace(&states[slot]) {
      ($0.entry ?? .empty, $0.hasEntry, $0.seeded, $0.revision)
    }
    var log: [BrokerLog.Record] = []
    // Who made the version a cluster's record names (the log's records say it themselves).
    var maker = (client: "", write: UInt64(0))
    if backend == .cluster, let last = working.lastClient {
      maker = (last, working.lastWrites[last] ?? 0)
    }
    var writers: [String] = []
    var batch = Batch(
      requests: requests,
      commit: Commit(token: nextToken, key: key, revision: revision, record: nil, log: []),
      name: backend == .cluster ? "\(run)/\(nextToken)" : "", attempts: attempts)
    // Sized once: a write releases an update and an answer, and makes one change.
    batch.releases.reserveCapacity(2 * requests.count)
    batch.changes.reserveCapacity(requests.count)
    if backend == .log { log.reserveCapacity(requests.count) }
    for (index, request) in requests.enumerated() {
      // The local functions capture neither `working` nor `seeded`: reading a captured
      // variable copies the whole entry.
      func answer(_ message: BrokerMessage?) { batch.releases.append(.answer(index, message)) }
      func change(
        _ change: Change, _ working: inout BrokerEntry, _ present: inout Bool,
        _ seeded: inout SeedOrigin?, needed: Bool = false
      ) {
        batch.changes.append(change)
        if needed || backend == .cluster || index < requests.count - 1 {
          Self.apply(change, to: &working, seeded: &seeded, instance: instance)
          present = true
        }
      }
      func snapshot(_ working: BrokerEntry) -> BrokerMessage {
        .snapshot(
          key: key, version: working.version, lastWrite: working.lastWrites[request.client] ?? 0,
          value: working.value, writes: working.writes(after: 0))
      }
      let seeding = request.now < seedWindow
      switch request.kind {
      case .get:
        // During the seed window, "no value" may only mean that no copy has arrived yet.
        if seeding, !present {
          if attempts == 0 { statistics.seedingRefusals += 1 }
          answer(
            .error(
              code: .seeding, message: "no copy of this key has arrived yet; ask again", key: key,
              write: 0))
        } else {
          answer(snapshot(working))
        }
      case .write(let write, let base, let value, let after, let quiet):
        let applied: BrokerEntry.Applied
        switch Self.judge(
          write: write, base: base, after: after, by: request.client, on: key, working,
          present: present, seeded: seeded, seeding: seeding, attempts: attempts,
          instance: instance, seedWindow: seedWindow)
        {
        case .apply(let next):
          applied = next
        case .seeding(let refusal):
          if attempts == 0 { statistics.seedingRefusals += 1 }
          answer(refusal)
          continue
        case .reject(let rejection):
          batch.rejected += 1
          answer(rejection)
          continue
        case .acknowledge(let ack):
          answer(ack)
          continue
        }
        change(.applied(applied, value), &working, &present, &seeded)
        if backend == .log {
          log.append(
            BrokerLog.Record(
              key: key, version: applied.version, client: request.client, write: write,
              value: value, instance: instance, owner: sessions.owner(of: request.client)))
        }
        maker = (request.client, write)
        if backend == .cluster { writers.append(request.client) }
        batch.applied += 1
        // Publish first: propagation to every reader matters more than the writer's ACK.
        batch.releases.append(
          .publish(
            .update(
              key: key, version: applied.version, client: request.client, write: write,
              value: value)))
        answer(quiet ? nil : .ack(key: key, write: write, version: applied.version))
      case .seed(let origin, let value, let writes, let fits):
        // A copy confirmed under this very instance is never newer.
        guard fits, origin.instance != instance else {
          answer(snapshot(working))
          continue
        }
        let current = Self.copyToBeat(present ? working : nil, seeded, instance: instance)
        guard !present || current != nil else {
          answer(snapshot(working))
          continue
        }
        // A newer copy of the very value the broker holds (a client confirmed it in a run that
        // wrote nothing) brings at most write records: adopting it would make a version that no
        // write made.
        guard current.map({ origin > $0 }) ?? true, !present || value != working.value else {
          // Not stored in the log: the records only help while the clients that hold those
          // writes are alive.
          if writes.contains(where: { working.lastWrites[$0.key] ?? 0 < $0.value }) {
            change(.merged(writes), &working, &present, &seeded, needed: true)
          }
          answer(snapshot(working))
          continue
        }
        let version = working.version + 1
        change(
          .adopted(origin, version: version, value: value, writes: writes), &working, &present,
          &seeded, needed: true)
        if backend == .log {
          log.append(
            BrokerLog.Record(
              key: key, version: version, client: request.client, write: 0, value: value,
              instance: instance, writes: present ? working.lastWrites : writes))
        }
        maker = (request.client, 0)
        batch.adopted += 1
        batch.releases.append(.report(.adopted(key: key, origin: origin)))
        batch.releases.append(
          .publish(
            .update(key: key, version: version, client: request.client, write: 0, value: value)))
        answer(snapshot(working))
      }
    }
    // A cluster forgets clients that went silent, at the next write of the key: a client that
    // any broker heard from (this one, or another, as the store's records of whom each broker
    // heard say) counts as writing when it was heard, so a live client's records outlast any
    // outage of its answers.
    if backend == .cluster, !batch.changes.isEmpty {
      var times = Dictionary(writers.map { ($0, wallClock) }, uniquingKeysWith: max)
      for client in working.lastWrites.keys where times[client] == nil {
        let elsewhere = heardElsewhere[client]
        let here = sessions.lastHeard(client).map { startedAt + $0.milliseconds }
        if let heard = here.map({ max($0, elsewhere ?? $0) }) ?? elsewhere { times[client] = heard }
      }
      let stamp = Change.stamped(times, at: wallClock, forgettingBefore: forgettingCutoff)
      batch.changes.append(stamp)
      Self.apply(stamp, to: &working, seeded: &seeded, instance: instance)
      present = true
    }
    // The log's batch must not hold the entry: applying it in place would copy it.
    if backend == .cluster {
      batch.entry = present ? working : nil
      batch.seeded = seeded
    }
    let record =
      backend == .cluster && !batch.changes.isEmpty
      ? ClusterRecord(
        entry: working, client: maker.client, write: maker.write, adoptedFrom: seeded,
        commit: batch.name)
      : nil
    batch.commit = Commit(
      token: batch.commit.token, key: key, revision: revision, record: record, log: log)
    return batch
  }

  /// What a write comes to on a key's state.
  enum WriteVerdict {
    /// It makes this next version.
    case apply(BrokerEntry.Applied)
    /// Held back: the broker still collects the clients' copies of the key.
    case seeding(BrokerMessage)
    /// Stale or out of its client's order: the key's state goes back with the refusal.
    case reject(BrokerMessage)
    /// This very write, found applied when a batch is decided again: stored by a commit whose
    /// answer was lost. The writes behind it will be applied too.
    case acknowledge(BrokerMessage)
  }

  /// Judges a write of `client` on `key`'s entry (`present`: whether the key has one), as
  /// the decision `attempts` of its batch, by the broker run `instance` that collects copies
  /// for `seedWindow`. Static, so that it can judge inside a key's state changed in place.
  static func judge(
    write: UInt64, base: UInt64, after: UInt64?, by client: String, on key: String,
    _ entry: BrokerEntry, present: Bool, seeded: SeedOrigin?, seeding: Bool, attempts: Int,
    instance: String, seedWindow: Duration
  ) -> WriteVerdict {
    if seeding, awaitsCopies(present ? entry : nil, seeded, instance: instance) {
      return .seeding(
        .error(
          code: .seeding,
          message: "collecting clients' copies of keys until \(seedWindow) after start",
          key: key, write: write))
    }
    let version = entry.version
    let lastWrite = entry.lastWrites[client] ?? 0
    let follows = after.map { $0 == lastWrite && entry.lastClient == client } ?? true
    guard write > lastWrite, base == version, follows else {
      if attempts > 0,
        let made = entry.recent?.last(where: { $0.client == client && $0.write == write }),
        made.version == base + 1
      {
        return .acknowledge(.ack(key: key, write: write, version: made.version))
      }
      return .reject(
        .reject(
          key: key, write: write, version: version, lastWrite: lastWrite, value: entry.value,
          writes: entry.writes(after: base)))
    }
    return .apply(BrokerEntry.Applied(version: version + 1, client: client, write: write))
  }

  /// Makes one decided change to a key's entry.
  static func apply(
    _ change: Change, to entry: inout BrokerEntry, seeded: inout SeedOrigin?, instance: String
  ) {
    switch change {
    case .applied(let applied, let value):
      entry.apply(applied, value: value, instance: instance)
      seeded = nil
    case .merged(let writes):
      entry.lastWrites.merge(writes, uniquingKeysWith: max)
    case .stamped(let times, let now, let cutoff):
      entry.stamp(times, forgettingBefore: cutoff, now: now)
    case .adopted(let origin, let version, let value, let writes):
      entry.lastWrites.merge(writes, uniquingKeysWith: max)
      entry.version = version
      entry.value = value
      entry.lastClient = nil
      entry.instance = instance
      entry.remember(writes, madeVersion: version)
      seeded = origin
    }
  }

  /// Whether clients' copies may still replace the key: no write was applied to it in this run
  /// (a key this run loaded, took from a copy, or does not have).
  static func awaitsCopies(_ entry: BrokerEntry?, _ seeded: SeedOrigin?, instance: String) -> Bool {
    guard case .some = entry else { return true }
    return copyToBeat(entry, seeded, instance: instance) != nil
  }

  /// What a copy of a key that may still take copies must be newer than: the newest copy this
  /// run adopted, or the earlier run and version that made the loaded value. `nil` for a key
  /// this run wrote (and for data older than protocol 2, which does not say which run made it).
  static func copyToBeat(_ entry: BrokerEntry?, _ seeded: SeedOrigin?, instance: String)
    -> SeedOrigin?
  {
    if let seeded { return seeded }
    guard let entry, let made = entry.instance, made != instance else { return nil }
    return SeedOrigin(instance: made, version: entry.version)
  }
}
