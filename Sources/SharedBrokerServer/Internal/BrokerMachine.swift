import Foundation

/// The broker as one state machine: requests, the store's answers, watched changes and the time
/// go in; what to send and what to store comes out as actions, which the server's thread (or
/// the simulation) carries out. Nothing in it blocks, locks, logs or calls back.
///
/// Each key is decided in batches: the requests on a key that arrive while its last batch is
/// being stored wait, and are then decided together and stored with one commit (group commit),
/// so a busy key costs one round trip to the store per batch. Other keys, and heartbeats, are
/// answered meanwhile; each connection's answers keep the order of its requests.
///
/// The store behind the commits is the broker's own log (`--data`), which answers at once, or a
/// cluster's shared store (etcd), where a commit applies only if the key is still at
/// the revision the machine last saw; a key that changed is decided again on its new record.
struct BrokerMachine {
  /// What the owner carries out.
  enum Action {
    /// A reply to the connection `peer` (its ROUTER identity).
    case reply(peer: Data, BrokerMessage)
    /// A message for every subscriber of its key's topic.
    case publish(BrokerMessage)
    /// Store a batch; answer with ``BrokerMachine/committed(_:_:)``.
    case commit(Commit)
    /// Something for the log.
    case report(Report)
    /// A cluster's broker records in the store whom it heard from and when, so that every
    /// broker keeps a live client's records.
    case recordHeard(HeardRecord)
    /// A cluster's broker deletes another broker run's record of whom it heard: the run stopped
    /// recording long ago.
    case removeHeard(run: String)
  }

  /// A batch to store: for the log, the records to append; for a cluster, the key's record to
  /// put (or `nil`, only to check) if the key is still at `revision`.
  struct Commit {
    let token: UInt64
    let key: String
    let revision: Int64
    let record: ClusterRecord?
    let log: [BrokerLog.Record]
  }

  /// How a commit ended.
  enum CommitOutcome {
    /// Stored, at this revision of the key (or, for a check, the key is at it).
    case stored(revision: Int64)
    /// The key had changed: its current record, or `nil` if it has none.
    case changed(StoredRecord?)
    /// Nothing was stored: the log could not be written, or the cluster is known unreachable.
    case refused(String)
    /// Sent, but unanswered: it may or may not be stored.
    case unanswered(String)
  }

  /// What a cluster's store said, as its driver hands it over.
  enum StoreEvent {
    /// A commit's outcome.
    case committed(UInt64, CommitOutcome)
    /// Records other brokers stored, in the store's order.
    case watched([(key: String, stored: StoredRecord)])
    /// Whether the store answers.
    case available(Bool)
    /// The cluster's brokers' ROUTER endpoints.
    case members([String])
    /// Whom other brokers of the cluster heard from: each one's record, by broker run.
    case heard([String: HeardRecord])
  }

  /// Where the keys live.
  enum Backend {
    /// The broker's own log (`--data`): commits are answered at once and never conflict.
    case log
    /// The broker's memory alone: nothing is stored, so a batch is final once decided, with no
    /// commit to make.
    case memory
    /// A store shared by the brokers of a cluster.
    case cluster
  }

  /// Something worth a line in the broker's log.
  enum Report {
    case rejectedRequest(reason: String, rejectedSoFar: Int)
    case oversized(key: String, bytes: Int)
    case forgotClients(Int)
    case adopted(key: String, origin: SeedOrigin)
    case storageFailed(key: String, reason: String)
    case commitUnanswered(key: String, reason: String)
  }

  /// The instance that WELCOME and PONG announce: this run's, or the cluster's.
  let instance: String
  /// This broker run, naming its commits.
  let run: String
  let backend: Backend
  let maxValueSize: Int
  let seedWindow: Duration
  var publisherEndpoint: String
  /// The endpoint this broker registered in its cluster's store, named first when it lists the
  /// cluster's brokers, so that a client that reached it under another name knows which it is.
  var advertised: String?
  /// How recently a client was heard from to count as active: a live client pings every
  /// heartbeat (2.5 s by default), however long the timeout keeps its records.
  static let activeWindow = Duration.seconds(5)
  /// How long a commit that went unanswered waits before it is sent again.
  static let retryDelay = Duration.milliseconds(200)
  /// How many times a batch is decided again on a key that other brokers keep changing.
  static let maxAttempts = 64
  static let unavailableMessage = "this broker cannot reach its cluster's store (etcd)"

  var sessions: ClientSessions
  /// Who may do what, by CURVE public key; `nil` without CURVE, where every client may do all.
  private(set) var allowList: AllowList?
  var replies = ConnectionReplies()
  /// Each key's place in `states`. A key is never removed (one deleted from a cluster's store
  /// keeps its emptied state), so a place stays valid: a request hashes its key once.
  var slots: [String: Int] = [:]
  var states: [KeyState] = []
  /// The place of the key each commit in flight is for.
  var flights: [UInt64: Int] = [:]
  var nextToken: UInt64 = 0
  /// The places of keys whose commit went unanswered, with when to send it again.
  var retries: [Int: Duration] = [:]
  /// The time since the broker started, as the last event told it.
  var now = Duration.zero
  /// When the broker started, in milliseconds since 1970: a cluster's records carry wall-clock
  /// times, which every broker compares.
  let startedAt: Int64
  /// The wall-clock time now, in milliseconds since 1970.
  var wallClock: Int64 { startedAt + now.milliseconds }
  /// Whether the cluster's store answers (always, for the log).
  private(set) var available = true
  /// The cluster's brokers, as its store last listed them (none for a broker on its own).
  private(set) var members: [String] = []
  /// In a cluster, when other brokers last heard from each client (wall-clock milliseconds), as
  /// they record it in the store: a client is alive while any broker hears it.
  private(set) var heardElsewhere: [String: Int64] = [:]
  /// In a cluster, the CURVE key each client id belongs to, as other brokers record it: an id
  /// is refused to any other key on every broker of the cluster.
  private(set) var ownersElsewhere: [String: String] = [:]
  /// In a cluster, how far each other broker run's record of whom it heard reaches (wall-clock
  /// milliseconds): hearings after that may exist that this broker does not know of yet.
  private(set) var recordedThrough: [String: Int64] = [:]
  /// When the active clients are next counted.
  private var nextActiveCount = Duration.zero
  /// When this broker next records whom it heard from.
  private var nextHeardRecord = Duration.zero
  /// What the machine has counted so far: its output, which the owner reads and never changes
  /// (the setter is open only to the machine's extensions in other files). What only the sockets
  /// know (bytes, connections, CURVE denials) the ``BrokerCore`` counts beside it.
  var statistics = BrokerStatistics()

  /// - Parameters:
  ///   - entries: The keys loaded from the data, for the log.
  ///   - records: The keys read from a cluster's store.
  ///   - now: The time since the broker started.
  ///   - startedAt: When it started, in milliseconds since 1970.
  init(
    instance: String, run: String, backend: Backend, configuration: BrokerConfiguration,
    publisherEndpoint: String, entries: [String: BrokerEntry] = [:],
    records: [String: StoredRecord] = [:], heard: [String: HeardRecord] = [:], now: Duration,
    startedAt: Int64 = 0
  ) {
    self.startedAt = startedAt
    self.instance = instance
    self.run = run
    self.backend = backend
    maxValueSize = configuration.maxValueSize
    seedWindow = configuration.seedWindow
    self.publisherEndpoint = publisherEndpoint
    advertised = configuration.advertise
    sessions = ClientSessions(timeout: configuration.clientTimeout)
    allowList = configuration.curve?.allowList
    // In key order, not the dictionaries' (which differs between processes): the simulation's
    // runs repeat exactly.
    for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
      states.append(KeyState(key: key, entry: entry))
    }
    for (key, stored) in records.sorted(by: { $0.key < $1.key }) {
      states.append(
        KeyState(
          key: key, entry: stored.record.entry, revision: stored.revision,
          seeded: stored.record.adoptedFrom))
    }
    for (slot, state) in states.enumerated() { slots[state.key] = slot }
    var clients = Set<String>()
    var owners: [String: String] = [:]
    for entry in states.compactMap(\.entry) {
      clients.formUnion(entry.lastWrites.keys)
      owners.merge(entry.owners ?? [:]) { first, _ in first }
    }
    sessions.adopt(clients, owners: owners, at: now)
    statistics.clients = sessions.count
    statistics.keys = states.count
    self.heard(heard)
  }

  /// Every key's confirmed entry.
  var entries: [String: BrokerEntry] {
    Dictionary(uniqueKeysWithValues: states.compactMap { state in state.entry.map { (state.key, $0) } })
  }

  // MARK: - Events

  /// Learns whether the cluster's store answers. Back from an outage, the broker records whom
  /// it heard at once: until it does, the other brokers forget no one.
  mutating func setAvailable(_ available: Bool) {
    if available, !self.available { nextHeardRecord = now }
    self.available = available
  }

  /// Learns the cluster's brokers; a change is published on the brokers' topic, so that
  /// connected clients learn a broker that joined, or stop counting on one that left.
  mutating func setMembers(_ members: [String]) -> [Action] {
    guard members != self.members else { return [] }
    self.members = members
    return [.publish(.brokers(announcement))]
  }

  /// The cluster's brokers as this one names them: itself first.
  private var announcement: [String] {
    guard let advertised, !members.isEmpty else { return members }
    return [advertised] + members.filter { $0 != advertised }
  }

  /// Takes a new allow-list (the file was read again): its rules hold from the next request on.
  mutating func setAllowList(_ allowList: AllowList) {
    self.allowList = allowList
  }

  /// Learns whom other brokers of the cluster heard from, by broker run.
  mutating func heard(_ records: [String: HeardRecord]) {
    for (run, record) in records {
      heardElsewhere.merge(record.clients, uniquingKeysWith: max)
      for (client, owner) in record.owners ?? [:] where ownersElsewhere[client] == nil {
        ownersElsewhere[client] = owner
      }
      recordedThrough[run] = max(recordedThrough[run] ?? record.asOf, record.asOf)
    }
  }

  /// How often a cluster's broker records whom it heard from.
  var heardRecordInterval: Duration { sessions.timeout / 4 }

  /// How old a broker run's record of whom it heard may grow before it stops holding back the
  /// others' forgetting: its broker died, or has been cut from the store for that long.
  var heardRecordRetirement: Duration { sessions.timeout * 2 }

  /// In a cluster, the clients last heard before this time (wall-clock milliseconds) are
  /// forgotten: silent here for the timeout, and for the timeout before the point every other
  /// broker's record reaches. A broker that cannot record (cut from the store) thus holds the
  /// forgetting back, until its record retires.
  var forgettingCutoff: Int64 {
    let retired = wallClock - heardRecordRetirement.milliseconds
    let reach = recordedThrough.values.lazy.filter { $0 >= retired }.min() ?? wallClock
    return min(reach, wallClock) - sessions.timeout.milliseconds
  }

  /// How long the serving loop may wait for a request before it calls ``tick(at:)``: a fraction
  /// of a second while a commit waits to be sent again, otherwise a second (often enough for the
  /// forgetting and, in a cluster, the record of whom this broker heard).
  var tickInterval: Duration { retries.isEmpty ? .seconds(1) : Self.retryDelay / 2 }

  /// The time passed: forgets clients silent for longer than the timeout, and sends again the
  /// commits that went unanswered.
  mutating func tick(at now: Duration) -> [Action] {
    var actions: [Action] = []
    self.now = now
    // Counting goes through every client: not on every wake-up.
    if now >= nextActiveCount {
      nextActiveCount = now + .seconds(1)
      statistics.activeClients = sessions.heard(since: now - Self.activeWindow)
    }
    forgetSilentClients(at: now, into: &actions)
    if backend == .cluster, now >= nextHeardRecord {
      nextHeardRecord = now + heardRecordInterval
      // Retired records go from the store too, so that broker runs long gone leave nothing
      // behind; only while the store answers, or they would stay there.
      let retired = wallClock - heardRecordRetirement.milliseconds
      if available {
        for (run, reach) in recordedThrough.sorted(by: { $0.key < $1.key }) where reach < retired {
          recordedThrough[run] = nil
          actions.append(.removeHeard(run: run))
        }
      }
      let cutoff = forgettingCutoff
      heardElsewhere = heardElsewhere.filter { $0.value >= cutoff }
      ownersElsewhere = ownersElsewhere.filter { heardElsewhere[$0.key] != nil }
      // Recorded even when empty: the record says how far this broker's hearings are known.
      let heard = sessions.lastHeard().mapValues { startedAt + $0.milliseconds }
      let owners = sessions.owners()
      actions.append(
        .recordHeard(
          HeardRecord(asOf: wallClock, clients: heard, owners: owners.isEmpty ? nil : owners)))
    }
    guard !retries.isEmpty else { return actions }
    // In the keys' order of arrival, not the dictionary's (which differs between processes):
    // the simulation's runs repeat exactly.
    for slot in retries.keys.sorted() where retries[slot]! <= now {
      retries[slot] = nil
      resend(slot, into: &actions)
    }
    return actions
  }

  /// Handles one request (`frames` without the ROUTER identity) from the connection `peer`,
  /// whose CURVE public key is `clientKey` (`nil` without CURVE).
  mutating func receive(
    _ frames: FrameBuffer, from peer: Data, clientKey: String? = nil, at now: Duration
  ) -> [Action] {
    // The log's requests are answered without tickets: its driver must answer every commit
    // before it hands the machine the next request.
    assert(backend == .cluster || flights.isEmpty, "a log commit is still unanswered")
    var actions: [Action] = []
    // A write's publication and answer: growing the list from empty would allocate twice.
    actions.reserveCapacity(2)
    handle(frames, from: peer, clientKey: clientKey, at: now, into: &actions)
    return actions
  }

  private mutating func handle(
    _ frames: FrameBuffer, from peer: Data, clientKey: String?, at now: Duration,
    into actions: inout [Action]
  ) {
    statistics.requests += 1
    self.now = now
    guard frames.count > 0 else { return }
    let request: BrokerMessage
    do {
      request = try BrokerMessage(frames: frames)
    } catch {
      refuseUndecodable(frames, error, from: peer, into: &actions)
      return
    }
    switch request {
    case .hello: statistics.hellos += 1
    case .ping: statistics.pings += 1
    case .get: statistics.gets += 1
    case .sync: statistics.syncs += 1
    case .seed: statistics.seeds += 1
    case .write: statistics.writes += 1
    case .welcome, .pong, .snapshot, .ack, .reject, .error, .update, .synced, .brokers: break
    }
    let written: (key: String, write: UInt64)? =
      if case .write(_, let write, let key, _, _, _, _) = request { (key, write) } else { nil }
    func refuse(_ code: BrokerErrorCode, _ message: String) {
      if code == .forbidden { statistics.forbidden += 1 }
      replies.reply(
        .error(code: code, message: message, key: written?.key, write: written?.write), to: peer,
        into: &actions)
    }
    // A question about a key names it, with write 0 (no write), as the seed window's answers do.
    func forbid(question key: String, _ message: String) {
      statistics.forbidden += 1
      replies.reply(
        .error(code: .forbidden, message: message, key: key, write: 0), to: peer, into: &actions)
    }
    var permissions = KeyPermissions.all
    if let allowList {
      // The key was on the list when it connected; a reload may have removed it since.
      guard let clientKey, let granted = allowList.entries[clientKey] else {
        let message = "this client's key is no longer on the broker's allow-list"
        if case .ping = request {
          // A heartbeat's answer never waits behind answers that wait on the store.
          statistics.forbidden += 1
          actions.append(
            .reply(peer: peer, .error(code: .forbidden, message: message, key: nil, write: nil)))
        } else {
          refuse(.forbidden, message)
        }
        return
      }
      permissions = granted
    }
    // Whether or not the cluster's store answers: the id is not this key's to use anywhere.
    if case .hello(let client, _) = request, let clientKey, let owner = owner(of: client),
      owner != clientKey
    {
      refuse(.forbidden, "client id \"\(client)\" belongs to another client key")
      return
    }
    // A broker cut from its cluster's store can neither apply writes nor vouch for its values:
    // clients hear so and move to another broker of the cluster.
    if !available, request.isHelloOrPing {
      statistics.unavailable += 1
      let message = BrokerMessage.error(
        code: .unavailable, message: Self.unavailableMessage, key: nil, write: nil)
      // A heartbeat's answer never waits behind answers that wait on the store.
      if case .ping = request {
        actions.append(.reply(peer: peer, message))
      } else {
        replies.reply(message, to: peer, into: &actions)
      }
      return
    }
    switch request {
    case .hello(let client, let version):
      sessions.heard(from: client, peer: peer, owner: clientKey, at: now)
      statistics.clients = sessions.count
      replies.reply(
        .welcome(
          instance: instance, publisher: publisherEndpoint, maxValueSize: UInt64(maxValueSize),
          brokers: announcement, version: version),
        to: peer, into: &actions)
      return
    case .ping(let versions):
      sessions.heard(fromPeer: peer, at: now)
      let behind = versions.compactMap { held -> KeyVersion? in
        // A key the client may no longer read (a reload took it away) gets a version it cannot
        // hold, which tells nothing of the key: it asks again, and hears the refusal.
        guard permissions.mayRead(held.key) else { return KeyVersion(key: held.key, version: .max) }
        let version = slots[held.key].flatMap { states[$0].entry?.version } ?? 0
        return version == held.version ? nil : KeyVersion(key: held.key, version: version)
      }
      actions.append(.reply(peer: peer, .pong(instance: instance, behind: behind)))
      return
    default:
      break
    }
    guard let client = request.client else {
      statistics.unknownCommands += 1
      replies.reply(
        .error(code: .unknownCommand, message: "not a request", key: nil, write: nil), to: peer,
        into: &actions)
      return
    }
    guard let hello = sessions.heard(fromPeer: peer, at: now) else {
      statistics.withoutHello += 1
      refuse(
        .helloFirst,
        "say HELLO first: this connection has not said HELLO to this broker, "
          + "or its client id said HELLO on another connection since"
      )
      return
    }
    guard hello == client else {
      statistics.malformed += 1
      refuse(.badRequest, "client \"\(client)\" is not the one this connection said HELLO as")
      return
    }
    switch request {
    case .sync(_, let key), .get(_, let key):
      guard permissions.mayRead(key) else {
        forbid(question: key, "key \"\(key)\" is not readable with this client's key")
        return
      }
    case .seed(_, let key, _, _, _, _):
      // An adopted copy becomes the key's value: offering one is writing.
      guard permissions.mayWrite(key) else {
        forbid(question: key, "key \"\(key)\" is not writable with this client's key")
        return
      }
    case .write(_, _, let key, _, _, _, _):
      guard permissions.mayWrite(key) else {
        refuse(.forbidden, "key \"\(key)\" is not writable with this client's key")
        return
      }
    default:
      break
    }
    switch request {
    case .sync(let client, let key):
      actions.append(.publish(.synced(key: key, client: client)))
    case .get(let client, let key):
      guard available else {
        replies.reply(
          .error(
            code: .storage, message: "the cluster's store did not answer; ask again", key: key,
            write: 0), to: peer, into: &actions)
        return
      }
      enqueue(KeyRequest(peer: peer, client: client, now: now, kind: .get), on: key, into: &actions)
    case .seed(let client, let key, let origin, let version, let value, let writes):
      // Unanswered when the cluster cannot be reached: the client offers its copy again.
      guard available else { return }
      // A copy over the value limit (a broker restarted with a smaller one) is not adopted; the
      // client takes the broker's state instead, as for any refused copy.
      let fits = value.count <= maxValueSize
      if !fits { statistics.oversized += 1 }
      let copy = KeyRequest.Kind.seed(
        origin: SeedOrigin(instance: origin, version: version), value: value, writes: writes,
        fits: fits)
      enqueue(KeyRequest(peer: peer, client: client, now: now, kind: copy), on: key, into: &actions)
    case .write(let client, let write, let key, let base, let value, let after, let quiet):
      guard value.count <= maxValueSize else {
        statistics.oversized += 1
        actions.append(.report(.oversized(key: key, bytes: value.count)))
        refuse(.tooLarge, "value of \(value.count) bytes exceeds \(maxValueSize)")
        return
      }
      // Not `storage` ("not applied"): an earlier delivery of this write may be in a commit
      // whose answer is in doubt. The client moves, and the next broker's snapshot says.
      guard available else {
        statistics.unavailable += 1
        refuse(.unavailable, Self.unavailableMessage)
        return
      }
      let kind = KeyRequest.Kind.write(
        write: write, base: base, value: value, after: after, quiet: quiet)
      enqueue(KeyRequest(peer: peer, client: client, now: now, kind: kind), on: key, into: &actions)
    case .hello, .ping, .welcome, .pong, .snapshot, .ack, .reject, .error, .update, .synced, .brokers:
      statistics.unknownCommands += 1
      refuse(.unknownCommand, "not a request")
    }
  }

  /// The CURVE key `client`'s id belongs to, as this broker knows it (from its own sessions, or
  /// from the cluster's records of whom the other brokers heard).
  func owner(of client: String) -> String? {
    sessions.owner(of: client) ?? ownersElsewhere[client]
  }

  /// The cluster's revision of the key as the broker holds it (0: none).
  func revision(of key: String) -> Int64 { slots[key].map { states[$0].revision } ?? 0 }

  /// Takes what other brokers of the cluster stored, in the store's order, and publishes it.
  mutating func watched(_ changes: [(key: String, stored: StoredRecord)]) -> [Action] {
    var actions: [Action] = []
    // Changes at or below a key's revision are already taken: the broker's own commits,
    // echoed, or a history read again.
    for change in changes where change.stored.revision > revision(of: change.key) {
      let slot = slot(change.key)
      let waiting = Self.inPlace(&states[slot]) { state in
        guard state.flight != nil else { return false }
        // Published once the key's own commit is answered, so versions go out in order.
        if change.stored.revision > state.watched?.revision ?? 0 { state.watched = change.stored }
        return true
      }
      guard !waiting else { continue }
      absorb(change.stored, into: slot, &actions)
    }
    return actions
  }

  // MARK: - Requests

  private mutating func refuseUndecodable(
    _ frames: FrameBuffer, _ error: BrokerProtocolError, from peer: Data,
    into actions: inout [Action]
  ) {
    switch error {
    case .malformed, .version: statistics.malformed += 1
    case .unknownCommand: statistics.unknownCommands += 1
    case .invalidKey: statistics.invalidKeys += 1
    }
    let rejected = statistics.rejectedInput
    // The first few, then every power of two, so a flood cannot flood the log too.
    if rejected <= 8 || rejected & (rejected - 1) == 0 {
      actions.append(.report(.rejectedRequest(reason: "\(error)", rejectedSoFar: rejected)))
    }
    let written = BrokerMessage.writeFields(of: frames)
    replies.reply(
      .error(
        code: error.code, message: error.description, key: written?.key, write: written?.write),
      to: peer, into: &actions)
  }

  /// Drops what the broker keeps for clients that went silent for longer than the timeout.
  /// In a cluster the records stay: another broker may be serving the client.
  private mutating func forgetSilentClients(at now: Duration, into actions: inout [Action]) {
    let expired = sessions.expire(at: now)
    guard !expired.isEmpty else { return }
    if backend != .cluster {
      for slot in states.indices { states[slot].entry?.forget(expired) }
    }
    statistics.forgottenClients += expired.count
    statistics.clients = sessions.count
    actions.append(.report(.forgotClients(expired.count)))
  }
}

extension Duration {
  /// The duration in whole milliseconds.
  var milliseconds: Int64 {
    components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
  }
}
