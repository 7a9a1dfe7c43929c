import Foundation
import HeapModule
import QuickJSON
import TestSupport
import ZeroMQ

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// One run of a simulated world from one seed: clients (the real client and key state
/// machines), the real broker (``BrokerMachine`` and ``BrokerLog``) or two or three brokers of a
/// cluster sharing a simulated etcd (``SimulatedEtcd``), and a network and clocks of its own,
/// all driven by one random number generator, on one thread. The same seed makes the same run,
/// message for message.
///
/// Faults, while they last: messages lost (which breaks their connection, as with TCP) and
/// delayed (each connection stays in order), writes delivered twice, connections cut and re-made, updates dropped at the publisher's
/// high-water mark, the broker killed and restarted with its data, without it, or with its log
/// cut short, clients killed and replaced, and clocks that jump. In a cluster: brokers killed and
/// restarted from etcd (clients move to another), transactions whose answer is lost after they
/// applied, that apply late, or whose retry finds their own put, leader elections that stall
/// every transaction, a broker cut from etcd, and the watched history compacted away. Then the
/// faults stop, and the world must settle.
///
/// Checked as it runs: no value the broker holds counts a mutation twice; no client has more
/// writes in flight than its window; the clients send at most 10 requests other than heartbeats
/// per mutation and 200 per fault (a resend loop would not stop); no client's loop turns forever at one instant; every
/// mutation leaves its client's I/O thread woken, or with a wake-up on its way; at a
/// restart, every write confirmed to a live client survives (a dead client's may be lost when
/// no live copy holds it, as PROTOCOL.md says). Checked at the end: every live client converges
/// to the broker's value within a bound once the faults stop, with every confirmed mutation in
/// it exactly once, and then sends nothing but heartbeats; the broker's per-key records stay
/// within their bounds. Every `PING` a broker takes is answered at once, whatever its commits
/// wait for, and no broker sends a commit once the world has settled.
final class Simulation {
  struct Failure: Error, CustomStringConvertible {
    let seed: UInt64
    let reason: String
    var description: String { "seed \(seed): \(reason)" }
  }

  /// What one run did, for the figures.
  struct Outcome {
    var events = 0
    var mutations = 0
    var faults = 0
    var restarts = 0
    /// Whether the world was a cluster on etcd.
    var clustered = false
    /// Client records a cluster dropped after the client timeout.
    var expiredRecords = 0
    /// Times a broker's store judged etcd unavailable.
    var unavailableVerdicts = 0
    /// Moves to a broker the client was not given but learned from the cluster.
    var movesToLearned = 0
    /// Connections the broker closed before their handshake ended.
    var failedHandshakes = 0
    /// A writer's own updates it dropped undecoded, an answer having settled them.
    var settledOwnUpdates = 0
    /// A writer's own updates the publisher dropped: the only answer of a quiet write.
    var droppedOwnUpdates = 0
    /// `HELLO`s with a live client's id from another key, each refused.
    var impostorsRefused = 0
    /// Client keys a reload took off the brokers' allow-lists for a while.
    var keysRevoked = 0
    /// Client keys a reload made read-only on one key for a while.
    var keysMadeReadOnly = 0
    /// Mutations the brokers refused (`forbidden`), which their clients dropped.
    var mutationsRefused = 0
    /// Whether the users stopped mutating before the faults stopped.
    var quietEnd = false
    /// Sim time from the end of the faults until every live client held the broker's value.
    var settled = Duration.zero
  }

  private enum Event {
    case toBroker(client: Int, broker: Int, epoch: Int, frames: [Data])
    case reply(client: Int, epoch: Int, BrokerMessage)
    case published(client: Int, epoch: Int, BrokerMessage)
    case wake(client: Int, generation: Int)
    case mutate(client: Int, key: Int)
    /// Another client key says `HELLO` with the client's id to a broker that knows whose it is.
    case impostor(client: Int)
    case dealerConnects(client: Int)
    /// The socket monitor tells the client's loop that its DEALER's connection to `endpoint`
    /// broke: after the call that found it, as the real loop hears of it.
    case dealerLost(client: Int, endpoint: String)
    case subscriberConnects(client: Int)
    case subscriptionTakesEffect(client: Int, epoch: Int)
    case fault
    case brokerStarts(broker: Int, withData: Bool, cutLog: Bool)
    case etcdReceives(broker: Int, run: Int, EtcdCommit)
    case committed(broker: Int, run: Int, id: UInt64, Result<BrokerClusterCommit, any Error>)
    case applyLate(EtcdCommit)
    case etcdPuts(broker: Int, run: Int, key: String, Data?)
    case watch(broker: Int, run: Int)
    case brokerTick(broker: Int, run: Int)
    /// A broker's store asks etcd whether its quorum answers, as every half second.
    case probe(broker: Int, run: Int)
    /// The answer to the probe sent at `sent`, or its failure.
    case probed(broker: Int, run: Int, sent: Duration, answered: Bool)
    /// A reload puts the client's key back on every broker's allow-list.
    case keyRestored(client: Int)
    /// A reload lets the client's key write every key again.
    case writesRestored(client: Int)
    case spawn
    case check
  }

  /// An event's place in the queue; the event itself waits in `events`, so the heap moves
  /// two integers, not messages.
  private struct Scheduled: Comparable {
    let time: Duration
    let sequence: Int

    static func < (lhs: Self, rhs: Self) -> Bool {
      lhs.time < rhs.time || lhs.time == rhs.time && lhs.sequence < rhs.sequence
    }
  }

  static let seedWindow = Duration.seconds(3)
  static let maxWritesInFlight = 4
  /// How long the world may take to settle once the faults stop.
  static let settleBound = Duration.seconds(30)

  let seed: UInt64
  private var random: SplitMix64
  private let tracing: Bool
  /// The last events, when tracing.
  private(set) var trace: [String] = []
  private let base = ContinuousClock.now
  private var now = Duration.zero
  private var queue = Heap<Scheduled>()
  private var events: [Int: Event] = [:]
  /// Requests other than heartbeats sent by every client: bounded by the mutations and faults.
  private var requests = 0
  private var sequence = 0
  private var outcome = Outcome()

  // This seed's faults.
  private let keys: [String]
  private let loss: Double
  private let duplication: Double
  private let publisherDrops: Double
  private let maxDelay: Duration
  private let faultEvery: Duration
  private let usesData: Bool
  private let activeFor: Duration
  /// When the users stop mutating: at the end of the faults, or (in some worlds) earlier, so
  /// that restarts and refusals also come when no write follows to bring a client up to date.
  private let mutationsStop: Duration
  private var faultsActive = true
  /// No fault is injected before this (a restart's seed window, which the protocol needs).
  private var quietUntil = Duration.zero

  // The brokers: one, or those of a cluster with their etcd.
  private var brokers: [SimulatedBroker?]
  private var brokerStarted: [Duration]
  private var brokerRun = 0
  private let etcd: SimulatedEtcd?
  /// Until when etcd elects a leader: transactions wait.
  private var electionUntil = Duration.zero
  /// Until when each broker is cut from etcd.
  private var cutFromEtcd: [Duration]
  /// How long an etcd transaction may go unanswered before the broker's client gives up on it.
  static let etcdTimeout = Duration.seconds(1)
  /// How long etcd may leave every probe unanswered before a broker's store calls it unavailable
  /// (the `broker` program's).
  static let unavailableAfter = Duration.seconds(3)
  /// Each cluster broker's verdict on etcd, as its store reaches it.
  private var availability: [ClusterAvailability?]
  /// When each cluster broker sent the newest question etcd answered: a verdict made of
  /// questions sent before the faults stopped may still turn.
  private var lastAnsweredQuestion: [Duration]
  /// When the faults stopped and the world healed.
  private var healedAt = Duration.zero
  /// How long a dead broker stays registered in etcd: its lease's time to live.
  static let memberLease = Duration.seconds(5)
  /// When each dead broker's registration expires.
  private var leaseEnds: [Duration]
  /// How long a cluster keeps the records of a client that stopped writing a key: short, so
  /// that records expire during the run, yet longer than any write waits for its answer or any
  /// client is cut off (PROTOCOL.md: a client away longer may see its write applied twice).
  private let clusterClientTimeout: Duration
  /// The clients' heartbeat: half a second (their retries as long) or the default (their
  /// retries shorter).
  private let heartbeat: Duration
  /// How long a settled world is watched for anything but heartbeats: four of them, longer
  /// than any retry interval.
  private var quietTail: Duration { heartbeat * 4 }
  /// Commits sent once the world had settled.
  private var commitsAfterSettling = 0
  private let dataDirectory: URL
  private var nextPeer = 0
  private var peers: [Data: (client: Int, epoch: Int)] = [:]

  private var clients: [SimulatedClient] = []
  /// Confirmed mutations of dead clients that no live copy held at a restart.
  private var lost: Set<String> = []
  private var settledAt: Duration?
  /// Processes killed whose replacements have not started yet.
  private var pendingSpawns = 0
  /// The clients whose keys a reload took off the brokers' allow-lists for a while.
  private var revoked: Set<Int> = []
  /// Whose keys are off, until the reload that puts them back: the world settles after.
  private var pendingRestores = 0
  /// The clients whose keys a reload made read-only on one key (by index) for a while.
  private var readOnly: [Int: Int] = [:]
  /// Every client and key index that was ever read-only (or off the allow-lists): only their
  /// mutations may be refused.
  private var everReadOnly: Set<[Int]> = []

  /// The brokers' allow-list now: every client's key but the revoked ones (read-only on a key
  /// for some), and the impostor's.
  private var allowList: AllowList {
    var list = AllowList(allowing: ["impostor"])
    for index in clients.indices where !revoked.contains(index) {
      list.entries[clients[index].key] =
        readOnly[index].map { readable in
          KeyPermissions(
            read: [KeyPattern("*")],
            write: keys.indices.filter { $0 != readable }.map { KeyPattern(keys[$0]) })
        } ?? .all
    }
    return list
  }

  /// The brokers' configuration: CURVE, whose only part the machine reads is the allow-list.
  private func configuration(_ configuration: BrokerConfiguration) -> BrokerConfiguration {
    var configuration = configuration
    configuration.curve = .init(secretKey: "", allowList: allowList)
    return configuration
  }

  /// Hands every running broker the allow-list, as a `SIGHUP` does.
  private func reloadAllowLists() {
    let list = allowList
    for broker in brokers { broker?.setAllowList(list) }
  }

  init(seed: UInt64, tracing: Bool = false) {
    self.seed = seed
    self.tracing = tracing
    var random = SplitMix64(seed: seed)
    keys = random.chance(0.3) ? ["k", "j"] : ["k"]
    loss = random.chance(0.5) ? Double.random(in: 0...0.05, using: &random) : 0
    duplication = random.chance(0.3) ? Double.random(in: 0...0.05, using: &random) : 0
    publisherDrops = random.chance(0.4) ? Double.random(in: 0...0.2, using: &random) : 0
    maxDelay = random.duration(.microseconds(100), .milliseconds(random.chance(0.3) ? 800 : 20))
    faultEvery = random.duration(.milliseconds(300), .seconds(4))
    usesData = random.chance(0.5)
    etcd = random.chance(0.5) ? SimulatedEtcd() : nil
    heartbeat = random.chance(0.5) ? .milliseconds(500) : BrokerClient.Configuration().heartbeatInterval
    // A cluster's faults last longer than its records live, so that records expire under them.
    activeFor = random.duration(.seconds(2), etcd == nil ? .seconds(6) : heartbeat * 28)
    mutationsStop = random.chance(0.3) ? random.duration(activeFor / 4, activeFor) : activeFor
    // 12 to 18 heartbeats, so that the brokers forget clients that are gone, and not the ones
    // that keep pinging.
    clusterClientTimeout = random.duration(heartbeat * 12, heartbeat * 18)
    let brokerCount = etcd == nil ? 1 : Int.random(in: 2...3, using: &random)
    brokers = Array(repeating: nil, count: brokerCount)
    brokerStarted = Array(repeating: .zero, count: brokerCount)
    cutFromEtcd = Array(repeating: .zero, count: brokerCount)
    availability = Array(repeating: nil, count: brokerCount)
    lastAnsweredQuestion = Array(repeating: .zero, count: brokerCount)
    leaseEnds = Array(repeating: .zero, count: brokerCount)
    self.random = random
    dataDirectory = URL(
      fileURLWithPath: FileManager.default.fileExists(atPath: "/dev/shm")
        ? "/dev/shm" : NSTemporaryDirectory()
    )
    .appendingPathComponent("sim-\(seed)-\(UUID().uuidString.prefix(8))")
  }

  deinit {
    try? FileManager.default.removeItem(at: dataDirectory)
  }

  // MARK: - Running

  func run() throws -> Outcome {
    for broker in brokers.indices { try startBroker(broker, withData: usesData, cutLog: false) }
    // Sometimes one client alone: the only holder of every copy.
    for _ in 0..<Int.random(in: 1...4, using: &random) { spawn() }
    schedule(after: faultEvery, .fault)
    schedule(at: activeFor, .check)
    while let next = queue.popMin() {
      now = next.time
      outcome.events += 1
      if requests > 10 * (outcome.mutations + 1) + 200 * (outcome.faults + 1) {
        throw failure(
          "\(requests) requests other than heartbeats for \(outcome.mutations) mutations and "
            + "\(outcome.faults) faults: a resend loop? \(state())"
        )
      }
      try handle(events.removeValue(forKey: next.sequence)!)
      if let settledAt, now >= settledAt + quietTail { break }
      if !faultsActive, settledAt == nil, now > activeFor + Self.settleBound {
        throw failure(
          "did not settle within \(Self.settleBound) after the faults stopped: \(state())")
      }
    }
    try finalChecks()
    outcome.mutationsRefused = clients.reduce(0) { $0 + $1.storage.refusedWriteCount() }
    outcome.clustered = etcd != nil
    outcome.quietEnd = mutationsStop < activeFor
    outcome.expiredRecords = etcd?.expiredRecords ?? 0
    return outcome
  }

  private func handle(_ event: Event) throws {
    switch event {
    case .toBroker(let index, let number, let epoch, let frames):
      let client = clients[index]
      guard let broker = brokers[number], client.alive, client.dealerUp, client.broker == number,
        client.dealerEpoch == epoch
      else { return }
      note { "broker\(number) ← \(client.id.prefix(4)): \(describe(frames))" }
      let sent = broker.receive(
        frames, from: client.peer, clientKey: client.key, at: now - brokerStarted[number])
      if frames.first == Data("PING".utf8),
        !sent.contains(where: { if case .reply(client.peer, _) = $0 { true } else { false } })
      {
        throw failure("broker\(number) did not answer a PING at once: \(state())")
      }
      try carryOut(sent, from: number)
    case .reply(let index, let epoch, let message):
      let client = clients[index]
      guard client.alive, client.dealerUp, client.dealerEpoch == epoch else { return }
      note { "\(client.id.prefix(4)) ← \(message)" }
      client.driver.handle(.reply(message), at: instant(client), via: transport(client))
      try turn(client)
    case .published(let index, let epoch, let message):
      let client = clients[index]
      guard client.alive, client.subscriberUp, client.subscriberEpoch == epoch else { return }
      // Through its frames, as the I/O thread reads it: a settled own update is dropped there,
      // the rest decoded from the buffer it receives into.
      let received = FrameBuffer(message.frames)
      if client.driver.isSettledOwnUpdate(received) {
        outcome.settledOwnUpdates += 1
        note { "\(client.id.prefix(4)) ⇐ \(message) (settled, dropped)" }
      } else {
        note { "\(client.id.prefix(4)) ⇐ \(message)" }
        let decoded = try BrokerMessage(published: received)
        client.driver.handle(.published([decoded]), at: instant(client), via: transport(client))
      }
      try turn(client)
    case .impostor(let index):
      try impersonate(clients[index])
    case .wake(let index, let generation):
      let client = clients[index]
      guard client.alive, client.wakeGeneration == generation else { return }
      try turn(client)
    case .mutate(let index, let key):
      let client = clients[index]
      // Mutations belong to the time of faults; one drawn at its very end would come after the
      // check that stops them, and be taken for a resend in the quiet tail.
      guard client.alive, now < mutationsStop else { return }
      // Sometimes a burst, as a user's loop makes: its mail reaches the I/O thread at one turn.
      for _ in 0..<(random.chance(0.3) ? Int.random(in: 2...4, using: &random) : 1) {
        let tag = "\(client.index).\(key).\(client.tags[key].count)"
        note { "\(client.id.prefix(4)) mutates \(tag)" }
        client.tags[key].append(tag)
        // Through the key's reference, as a user's `withLock` runs.
        let (name, number) = ("\(client.index)", client.tags[key].count - 1)
        client.references[key].withLock { $0.apply(tag, client: name, number: number) }
        outcome.mutations += 1
        // The storage wakes the I/O thread when it was not woken already; its turn sends it.
        if client.takeWakeRequest() {
          client.wakeGeneration += 1
          client.wakePending = true
          schedule(
            after: random.duration(.microseconds(5), .microseconds(200)),
            .wake(client: index, generation: client.wakeGeneration))
        } else if !client.wakePending {
          throw failure("\(client.id)'s mutation \(tag) left its I/O thread asleep: \(state())")
        }
      }
    case .dealerConnects(let index):
      let client = clients[index]
      guard client.alive, !client.dealerUp else { return }
      guard brokers[client.broker] != nil else {
        return reconnectLater(.dealerConnects(client: index))
      }
      // The broker closes the connection before the handshake ends, as one at its limit of
      // open files does: the monitor tells of it, and libzmq tries again later.
      if faultsActive, random.chance(0.05) {
        note { "\(client.id.prefix(4)) DEALER handshake closed" }
        outcome.failedHandshakes += 1
        for kind in [SocketMonitor.Kind.connected, .disconnected] {
          client.driver.handle(
            .dealer(.init(kind: kind, endpoint: client.dealerEndpoint)), at: instant(client),
            via: transport(client))
        }
        reconnectLater(.dealerConnects(client: index))
        return try turn(client)
      }
      client.dealerUp = true
      client.dealerEpoch += 1
      nextPeer += 1
      client.peer = Data("peer-\(nextPeer)".utf8)
      peers[client.peer] = (index, client.dealerEpoch)
      note { "\(client.id.prefix(4)) DEALER connected" }
      client.driver.handle(
        .dealer(.init(kind: .handshakeSucceeded, endpoint: client.dealerEndpoint)),
        at: instant(client), via: transport(client))
      try turn(client)
    case .dealerLost(let index, let endpoint):
      let client = clients[index]
      guard client.alive else { return }
      client.driver.handle(
        .dealer(.init(kind: .disconnected, endpoint: endpoint)), at: instant(client),
        via: transport(client))
      try turn(client)
    case .subscriberConnects(let index):
      let client = clients[index]
      // The SUB follows the WELCOME's publisher.
      guard client.alive, !client.subscriberUp, client.publisherKnown else { return }
      guard brokers[client.broker] != nil else {
        return reconnectLater(.subscriberConnects(client: index))
      }
      client.subscriberBroker = client.broker
      client.subscriberUp = true
      client.subscriberEpoch += 1
      schedule(
        after: random.duration(.microseconds(50), .milliseconds(3)),
        .subscriptionTakesEffect(client: index, epoch: client.subscriberEpoch)
      )
    case .subscriptionTakesEffect(let index, let epoch):
      let client = clients[index]
      guard client.alive, client.subscriberUp, client.subscriberEpoch == epoch else { return }
      client.subscribed = true
    case .fault:
      try injectFault()
    case .brokerStarts(let number, let withData, let cutLog):
      // The end of the faults may have started it already.
      guard brokers[number] == nil else { return }
      try startBroker(number, withData: withData, cutLog: cutLog)
      try declareLosses()
    case .etcdReceives(let number, let run, let commit):
      try etcdReceives(commit, from: number, run: run)
    case .committed(let number, let run, let id, let result):
      guard let broker = brokers[number], broker.run == run else { return }
      note { "broker\(number) ← etcd: \(id) \(result)" }
      try carryOut(broker.stored(.committed(id: id, result)), from: number)
    case .etcdPuts(let number, let run, let key, let record):
      // Waits out an election; lost when the broker is cut from etcd.
      if now < electionUntil {
        return schedule(
          at: electionUntil + delay(), .etcdPuts(broker: number, run: run, key: key, record))
      }
      guard now >= cutFromEtcd[number], let etcd else { return }
      if let record { etcd.put(key: key, record: record) } else { etcd.remove(key: key) }
      for (number, broker) in brokers.enumerated() {
        guard let broker else { continue }
        schedule(after: delay(), .watch(broker: number, run: broker.run))
      }
    case .applyLate(let commit):
      note { "etcd applies a late transaction on \(commit.key)" }
      _ = try applyToEtcd(commit)
    case .watch(let number, let run):
      guard let etcd, let broker = brokers[number], broker.run == run else { return }
      let (changes, next, history) = etcd.changes(from: broker.watchNext)
      broker.watchNext = next
      guard !changes.isEmpty else { return }
      try carryOut(broker.stored(.changed(changes, followsHistory: history)), from: number)
    case .brokerTick(let number, let run):
      // A tick that an earlier one replaced is gone.
      guard let broker = brokers[number], broker.run == run, broker.tickDue == now else { return }
      broker.tickDue = nil
      try carryOut(broker.tick(at: now - brokerStarted[number]), from: number)
    case .probe(let number, let run):
      guard brokers[number]?.run == run else { return }
      // Cut off, the question fails after the request timeout; otherwise etcd answers once it
      // has a leader.
      if now < cutFromEtcd[number] {
        schedule(after: Self.etcdTimeout, .probed(broker: number, run: run, sent: now, answered: false))
      } else {
        schedule(
          at: max(now, electionUntil) + delay(), .probed(broker: number, run: run, sent: now, answered: true))
      }
      schedule(after: .milliseconds(500), .probe(broker: number, run: run))
      try judgeAvailability(of: number) { $0.tick(now: base + now) }
    case .probed(let number, let run, let sent, let answered):
      guard let broker = brokers[number], broker.run == run else { return }
      if answered { lastAnsweredQuestion[number] = max(lastAnsweredQuestion[number], sent) }
      try judgeAvailability(of: number) {
        answered
          ? $0.answered(sentAt: base + sent, now: base + now) : $0.failed("cut off", now: base + now)
      }
      // The probe reads the brokers registered in etcd, as the real store's does.
      if answered { try carryOut(broker.stored(.members(members)), from: number) }
    case .spawn:
      pendingSpawns -= 1
      spawn()
    case .keyRestored(let index):
      pendingRestores -= 1
      revoked.remove(index)
      note { "\(clients[index].id.prefix(4))'s key is back on the allow-lists" }
      reloadAllowLists()
    case .writesRestored(let index):
      pendingRestores -= 1
      readOnly[index] = nil
      note { "\(clients[index].id.prefix(4))'s key may write every key again" }
      reloadAllowLists()
    case .check:
      try check()
    }
  }

  // MARK: - Clients

  private func spawn() {
    let index = clients.count
    let id = String(format: "c%02d-", index) + String(random.next(), radix: 36)
    // In a cluster, a client is given every broker, or one of them and learns the rest from
    // the brokers' announcements; sometimes by another name than the one the broker
    // registered (a given 127.0.0.1 against an advertised host name).
    let given =
      random.chance(0.5)
      ? brokers.indices.map(Self.endpoint)
      : [Self.endpoint(Int.random(in: brokers.indices, using: &random)) + (random.chance(0.5) ? "-alias" : "")]
    let client = SimulatedClient(
      index: index, id: id, keys: keys, heartbeat: heartbeat,
      maxWritesInFlight: Self.maxWritesInFlight, brokers: BrokerList(given: given),
      now: Moment(base) + now
    )
    clients.append(client)
    // Its key is on the brokers' allow-lists from the start, as an operator lists it first.
    reloadAllowLists()
    // The first turn takes the new keys: the loop starts with one.
    _ = client.takeWakeRequest()
    client.wakePending = true
    note { "\(id.prefix(4)) starts" }
    schedule(
      after: random.duration(.microseconds(10), .milliseconds(5)), .dealerConnects(client: index))
    schedule(after: .zero, .wake(client: index, generation: 0))
    guard now < activeFor else { return }
    for key in keys.indices {
      for _ in 0..<Int.random(in: 1...10, using: &random) {
        schedule(at: random.duration(now, activeFor), .mutate(client: index, key: key))
      }
    }
    if random.chance(0.5) { schedule(at: random.duration(now, activeFor), .impostor(client: index)) }
  }

  private func instant(_ client: SimulatedClient) -> Moment {
    Moment(base) + now + client.clockOffset
  }

  /// One turn of the client's loop after what woke it: timers, writes, sends, the next wake.
  private func turn(_ client: SimulatedClient) throws {
    if client.lastTurn == now {
      client.turnsNow += 1
      if client.turnsNow > 500 {
        let due = client.machine.keys.map {
          "\(String(describing: $0.deadline.map { $0 - instant(client) }))"
        }
        throw failure("\(client.id)'s loop spins at one instant (keys due in \(due)): \(state())")
      }
    } else {
      client.lastTurn = now
      client.turnsNow = 0
    }
    let at = instant(client)
    client.wakePending = false
    client.driver.handle(.turn, at: at, via: transport(client))
    try scheduleWake(client)
  }

  private func scheduleWake(_ client: SimulatedClient) throws {
    let at = instant(client)
    let due = client.machine.deadline(now: at)
    client.wakeGeneration += 1
    schedule(
      after: due - at, .wake(client: client.index, generation: client.wakeGeneration))
    for key in client.machine.keys where key.writesInFlight > Self.maxWritesInFlight {
      throw failure("\(client.id) has \(key.writesInFlight) writes in flight")
    }
  }

  /// The client's sockets, as its storage reaches them.
  private func transport(_ client: SimulatedClient) -> Transport {
    Transport(simulation: self, client: client)
  }

  /// What the storage sends: counted, and put on the DEALER's connection if it is up.
  fileprivate func clientSends(_ message: BrokerMessage, from client: SimulatedClient) -> Bool {
    switch message {
    case .hello, .ping: break
    default:
      client.requestsSent += 1
      requests += 1
    }
    // ZMQ_IMMEDIATE: with no connection up, the DEALER refuses what is sent.
    guard client.dealerUp, brokers[client.broker] != nil else { return false }
    send(message.frames, on: client)
    return true
  }

  private func send(_ frames: [Data], on client: SimulatedClient) {
    guard !disturbing || !random.chance(loss) else { return lose(describe(frames), on: client) }
    // A write delivered twice: the broker must apply it once.
    let copies =
      disturbing && frames.first == Data("WRITE".utf8) && random.chance(duplication) ? 2 : 1
    for _ in 0..<copies {
      client.lastDealerOut = max(client.lastDealerOut, now + delay())
      schedule(
        at: client.lastDealerOut,
        .toBroker(
          client: client.index, broker: client.broker, epoch: client.dealerEpoch, frames: frames))
    }
  }

  /// A message lost on a DEALER connection breaks it: TCP does not lose one message and carry
  /// on, so what follows on that connection is lost too, and the monitor tells of it.
  private func lose(_ message: String, on client: SimulatedClient) {
    note { "lost, with \(client.id.prefix(4))'s DEALER connection: \(message)" }
    cutDealer(client)
  }

  /// Whether messages are lost, delayed and dropped now: not after the faults, nor during a
  /// restarted broker's seed window (a copy that misses it is lost by design, see PROTOCOL.md).
  private var disturbing: Bool { faultsActive && now >= quietUntil }

  private func delay() -> Duration {
    random.duration(.microseconds(20), disturbing ? maxDelay : .microseconds(200))
  }

  // MARK: - The broker

  /// Carries out what broker `number` sends: replies to its connections, publications to its
  /// subscribers, and commits to etcd.
  /// A `HELLO` with `client`'s id from another key, to a broker that knows whose id it is (its
  /// own client, or one another broker of the cluster recorded): it must be refused, and change
  /// nothing. A broker that does not know the id (restarted in memory, or not told yet) would
  /// give it away, which SECURITY.md says.
  private func impersonate(_ client: SimulatedClient) throws {
    let knowing = brokers.indices.filter { brokers[$0]?.owner(of: client.id) == client.key }
    guard client.alive, let number = knowing.randomElement(using: &random),
      let broker = brokers[number]
    else { return }
    let peer = Data("impostor-\(client.index)".utf8)
    let sent = broker.receive(
      BrokerMessage.hello(client: client.id).frames, from: peer, clientKey: "impostor",
      at: now - brokerStarted[number])
    guard sent.count == 1, case .reply(peer, .error(.forbidden, _, nil, nil)) = sent[0],
      broker.owner(of: client.id) == client.key
    else {
      throw failure("broker\(number) let another key say HELLO as \(client.id): \(sent)")
    }
    note { "broker\(number) refused an impostor of \(client.id.prefix(4))" }
    outcome.impostorsRefused += 1
  }

  private func carryOut(_ actions: [SimulatedBroker.Sent], from number: Int) throws {
    if let undecodable = brokers[number]?.undecodable {
      throw failure("broker\(number) sent \(undecodable)")
    }
    for action in actions {
      switch action {
      case .reply(let peer, let message):
        guard let (index, epoch) = peers[peer] else { continue }
        let client = clients[index]
        guard client.alive, client.dealerUp, client.dealerEpoch == epoch else { continue }
        guard !disturbing || !random.chance(loss) else {
          lose("\(message)", on: client)
          continue
        }
        client.lastDealerIn = max(client.lastDealerIn, now + delay())
        schedule(at: client.lastDealerIn, .reply(client: index, epoch: epoch, message))
      case .publish(let message):
        for client in clients
        where client.alive && client.subscriberUp && client.subscribed
          && client.subscriberBroker == number
        {
          guard !disturbing || !random.chance(publisherDrops) else {
            if case .update(_, _, client.id, _, _) = message { outcome.droppedOwnUpdates += 1 }
            continue
          }
          client.lastSubscriber = max(client.lastSubscriber, now + delay())
          schedule(
            at: client.lastSubscriber,
            .published(client: client.index, epoch: client.subscriberEpoch, message)
          )
        }
      case .commit(let commit):
        if settledAt != nil { commitsAfterSettling += 1 }
        send(commit, from: number)
      case .put(let key, let record):
        guard let broker = brokers[number] else { continue }
        schedule(after: delay(), .etcdPuts(broker: number, run: broker.run, key: key, record))
      }
    }
    scheduleTick(of: number)
  }

  /// Ticks broker `number` as its serving loop does: at the latest once the machine's tick
  /// interval has passed without one.
  private func scheduleTick(of number: Int) {
    guard let broker = brokers[number] else { return }
    let due = now + broker.tickInterval
    if let scheduled = broker.tickDue, scheduled <= due { return }
    broker.tickDue = due
    schedule(at: due, .brokerTick(broker: number, run: broker.run))
  }

  // MARK: - etcd

  /// A broker's transaction on its way to etcd (its driver sends none while it knows it is
  /// cut off).
  private func send(_ commit: EtcdCommit, from number: Int) {
    guard let broker = brokers[number] else { return }
    schedule(after: delay(), .etcdReceives(broker: number, run: broker.run, commit))
  }

  /// A transaction reaches etcd: it waits for an election, and while the faults last its answer
  /// may be lost (after it applied, or before it applies late), or come from the etcd client's
  /// retry on another member, which finds the first one's put.
  private func etcdReceives(_ commit: EtcdCommit, from number: Int, run: Int) throws {
    if now < electionUntil {
      return schedule(at: electionUntil + delay(), .etcdReceives(broker: number, run: run, commit))
    }
    func answer(after time: Duration, _ outcome: Result<BrokerClusterCommit, any Error>) {
      schedule(after: time, .committed(broker: number, run: run, id: commit.id, outcome))
    }
    if now < cutFromEtcd[number] {
      // Sent before the broker knew: the quorum may or may not have it.
      if random.chance(0.5) { _ = try applyToEtcd(commit) }
      return answer(after: Self.etcdTimeout, .failure(EtcdUnanswered(description: "cut off")))
    }
    switch disturbing ? Int.random(in: 0..<20, using: &random) : 20 {
    case 0:
      _ = try applyToEtcd(commit)
      answer(after: Self.etcdTimeout, .failure(EtcdUnanswered(description: "answer lost")))
    case 1:
      schedule(after: random.duration(.zero, .seconds(3)), .applyLate(commit))
      answer(after: Self.etcdTimeout, .failure(EtcdUnanswered(description: "no answer in time")))
    case 2:
      let outcome = try applyToEtcd(commit)
      if case .stored = outcome, commit.record != nil {
        answer(after: delay(), .success(.changed(etcd!.records[commit.key])))
      } else {
        answer(after: delay(), .success(outcome))
      }
    default:
      answer(after: delay(), .success(try applyToEtcd(commit)))
    }
  }

  /// Applies a transaction; a put is checked, and every broker's watch hears of it.
  private func applyToEtcd(_ commit: EtcdCommit) throws -> BrokerClusterCommit {
    let outcome: BrokerClusterCommit
    do {
      outcome = try etcd!.apply(commit)
    } catch {
      throw failure("\(commit.key)'s record does not read back as a broker's record: \(error)")
    }
    guard case .stored = outcome, commit.record != nil, let record = etcd!.decoded[commit.key]
    else { return outcome }
    try checkBrokerValue(commit.key, record.entry.value)
    for (number, broker) in brokers.enumerated() {
      guard let broker else { continue }
      schedule(after: delay(), .watch(broker: number, run: broker.run))
    }
    return outcome
  }

  /// Feeds an event to broker `number`'s availability verdict and tells the broker when it turns.
  private func judgeAvailability(
    of number: Int, _ event: (inout ClusterAvailability) -> ClusterAvailability.Change?
  ) throws {
    guard let broker = brokers[number], availability[number] != nil,
      let change = event(&availability[number]!)
    else { return }
    note { "broker\(number): etcd \(change)" }
    if change != .available { outcome.unavailableVerdicts += 1 }
    try carryOut(broker.stored(.availability(change == .available)), from: number)
  }

  private func startBroker(_ number: Int, withData: Bool, cutLog: Bool) throws {
    brokerRun += 1
    brokerStarted[number] = now
    if let etcd {
      let broker = try SimulatedBroker(
        cluster: etcd,
        configuration: configuration(
          BrokerConfiguration(
            clientTimeout: clusterClientTimeout, seedWindow: Self.seedWindow,
            advertise: Self.endpoint(number))),
        run: brokerRun, name: "broker\(number)-run\(brokerRun)", startedAt: now.milliseconds)
      brokers[number] = broker
      note { "broker\(number) starts from etcd" }
      // The real store's verdict, on questions that the probe events ask: a broker started while
      // cut off has had no answer for as long as the verdict allows.
      let unanswered = now < cutFromEtcd[number] ? Self.unavailableAfter : .zero
      lastAnsweredQuestion[number] = now - unanswered
      availability[number] = ClusterAvailability(unavailableAfter: Self.unavailableAfter, now: base + now - unanswered)
      try judgeAvailability(of: number) { $0.tick(now: base + now) }
      schedule(after: delay(), .probe(broker: number, run: broker.run))
      scheduleTick(of: number)
      return
    }
    let instance = String(format: "%017d-sim", brokerRun)
    if cutLog { cutLogShort() }
    // The store is in memory, or in a directory that outlives the runs that use it.
    let broker = try SimulatedBroker(
      instance: instance, directory: withData ? dataDirectory : nil,
      configuration: configuration(BrokerConfiguration(seedWindow: Self.seedWindow)),
      run: brokerRun)
    brokers[number] = broker
    // An id the data names an owner of stays its owner's across the restart (the impostors
    // try it there too): never another key's.
    for client in clients {
      let owners = broker.entries.values.compactMap { $0.owners?[client.id] }
      guard owners.allSatisfy({ $0 == client.key }),
        owners.isEmpty || broker.owner(of: client.id) == client.key
      else {
        throw failure("the data gives \(client.id)'s id to \(owners), the broker to \(broker.owner(of: client.id) ?? "no one")")
      }
    }
    // Nothing to collect at the first start; after a restart the copies need the window.
    if brokerRun > 1 { quietUntil = now + Self.seedWindow }
    scheduleTick(of: number)
    note { "broker \(instance) starts\(withData ? " with data" : "")\(cutLog ? ", log cut" : "")" }
  }

  private func cutLogShort() {
    let log = dataDirectory.appendingPathComponent("log.jsonl")
    guard let data = try? Data(contentsOf: log), !data.isEmpty else { return }
    let cut = Int.random(in: 1...min(data.count, 400), using: &random)
    try? data.prefix(data.count - cut).write(to: log)
  }

  private func stopBroker(_ number: Int) throws {
    // What this run ends with must count no mutation twice, whatever the next run keeps.
    for (key, entry) in brokers[number]?.entries ?? [:] { try checkBrokerValue(key, entry.value) }
    brokers[number] = nil
    if etcd != nil { leaseEnds[number] = now + Self.memberLease }
    for client in clients where client.alive {
      if client.broker == number { cutDealer(client) }
      if client.subscriberBroker == number { cutSubscriber(client) }
    }
  }

  /// The simulated ROUTER endpoint of broker `number`.
  static func endpoint(_ number: Int) -> String { "broker\(number)" }

  /// The broker an endpoint reaches (`broker1`, or `broker1-alias` for the same broker).
  static func broker(at endpoint: String) -> Int {
    Int(endpoint.dropFirst("broker".count).prefix(while: \.isNumber))!
  }

  /// The brokers registered in etcd: every cluster broker running, and one that died until its
  /// lease runs out.
  private var members: [String] {
    brokers.indices.filter { brokers[$0] != nil || now < leaseEnds[$0] }.map(Self.endpoint)
  }

  private func cutDealer(_ client: SimulatedClient, tellingClient: Bool = true) {
    guard client.dealerUp else { return }
    client.dealerUp = false
    client.dealerEpoch += 1
    reconnectLater(.dealerConnects(client: client.index))
    guard tellingClient else { return }
    // The socket monitor tells the loop; libzmq reconnects by itself.
    schedule(after: .zero, .dealerLost(client: client.index, endpoint: client.dealerEndpoint))
  }

  /// Connects a client's DEALER to the broker at `endpoint`, as its machine asked.
  fileprivate func connectDealer(_ client: SimulatedClient, to endpoint: String) {
    client.dealerEndpoint = endpoint
    client.broker = Self.broker(at: endpoint)
    if !client.givenBrokers.contains(endpoint) { outcome.movesToLearned += 1 }
    note { "\(client.id.prefix(4)) moves to broker\(client.broker)" }
    cutDealer(client, tellingClient: false)
  }

  /// Connects a client's SUB to the publisher its machine named: the DEALER's broker's.
  fileprivate func connectSubscriber(_ client: SimulatedClient) {
    disconnectSubscriber(client)
    client.publisherKnown = true
    schedule(
      after: random.duration(.microseconds(50), .milliseconds(1)),
      .subscriberConnects(client: client.index))
  }

  fileprivate func disconnectSubscriber(_ client: SimulatedClient) {
    client.publisherKnown = false
    guard client.subscriberUp else { return }
    client.subscriberUp = false
    client.subscribed = false
    client.subscriberEpoch += 1
  }

  private func cutSubscriber(_ client: SimulatedClient) {
    guard client.subscriberUp else { return }
    client.subscriberUp = false
    client.subscribed = false
    client.subscriberEpoch += 1
    reconnectLater(.subscriberConnects(client: client.index))
  }

  private func reconnectLater(_ event: Event) {
    schedule(after: random.duration(.milliseconds(100), .seconds(1)), event)
  }

  // MARK: - Faults

  private func injectFault() throws {
    guard faultsActive else { return }
    defer { schedule(after: random.duration(.milliseconds(10), faultEvery), .fault) }
    guard now >= quietUntil, brokers.allSatisfy({ $0 != nil }) || etcd != nil else { return }
    outcome.faults += 1
    let alive = clients.filter(\.alive)
    let client = alive.randomElement(using: &random)!
    switch Int.random(in: 0..<(etcd == nil ? 10 : 13), using: &random) {
    case 0, 1:
      note { "fault: \(client.id.prefix(4))'s DEALER connection cut" }
      cutDealer(client)
    case 2:
      note { "fault: \(client.id.prefix(4))'s SUB connection cut" }
      cutSubscriber(client)
    case 3 where etcd != nil, 4 where etcd != nil:
      let number = Int.random(in: brokers.indices, using: &random)
      guard brokers[number] != nil else { return }
      note { "fault: broker\(number) killed" }
      outcome.restarts += 1
      try stopBroker(number)
      schedule(
        after: random.duration(.zero, .seconds(2)),
        .brokerStarts(broker: number, withData: false, cutLog: false))
    case 3, 4:
      let withData = usesData && random.chance(0.7)
      let cutLog = withData && random.chance(0.5)
      note { "fault: broker killed" }
      outcome.restarts += 1
      try stopBroker(0)
      schedule(
        after: random.duration(.zero, .seconds(2)),
        .brokerStarts(broker: 0, withData: withData, cutLog: cutLog)
      )
    case 5 where alive.count > 1, 6 where alive.count > 1:
      note { "fault: \(client.id.prefix(4)) killed" }
      client.alive = false
      pendingSpawns += 1
      schedule(after: random.duration(.milliseconds(1), .seconds(2)), .spawn)
    case 8 where !revoked.contains(client.index):
      note { "fault: \(client.id.prefix(4))'s key is taken off the allow-lists" }
      revoked.insert(client.index)
      // A removed key's writes are refused like a read-only key's.
      everReadOnly.formUnion(keys.indices.map { [client.index, $0] })
      pendingRestores += 1
      outcome.keysRevoked += 1
      reloadAllowLists()
      schedule(after: random.duration(.milliseconds(100), .seconds(3)), .keyRestored(client: client.index))
    case 9 where readOnly[client.index] == nil:
      let key = Int.random(in: keys.indices, using: &random)
      note { "fault: \(client.id.prefix(4))'s key may only read \(keys[key])" }
      readOnly[client.index] = key
      everReadOnly.insert([client.index, key])
      pendingRestores += 1
      outcome.keysMadeReadOnly += 1
      reloadAllowLists()
      // Sometimes outlasting a restart's seed window: its copy cannot be offered in time.
      let lasts = random.chance(0.3) ? random.duration(.seconds(3), .seconds(8)) : random.duration(.milliseconds(100), .seconds(3))
      schedule(after: lasts, .writesRestored(client: client.index))
    case 7:
      let jump = random.duration(.milliseconds(100), .seconds(5))
      note { "fault: \(client.id.prefix(4))'s clock jumps \(jump)" }
      client.clockOffset += jump
      try turn(client)
    case 10:
      electionUntil = now + random.duration(.milliseconds(300), .seconds(2))
      note { "fault: etcd elects a leader until \(electionUntil)" }
    case 11:
      let number = Int.random(in: brokers.indices, using: &random)
      guard brokers[number] != nil else { return }
      // Sometimes long enough for its store to call etcd unavailable, sometimes not.
      cutFromEtcd[number] = now + random.duration(.milliseconds(300), .seconds(6))
      note { "fault: broker\(number) cut from etcd until \(cutFromEtcd[number])" }
    case 12:
      note { "fault: etcd compacts its history" }
      etcd?.compact()
    default:
      note { "fault: nothing" }
    }
  }

  // MARK: - Invariants

  private func checkBrokerValue(_ key: String, _ value: Data) throws {
    guard !value.isEmpty else { return }
    let tally = try QuickJSONDecoder().decode(Tally.self, from: value)
    for (tag, count) in tally.counts where count > 1 {
      throw failure("the broker's \(key) counts mutation \(tag) \(count) times")
    }
  }

  /// Mutations of `client`'s missing from `key`: no more than the client's mutations the
  /// brokers refused, and only from a client that was read-only on the key.
  private func checkRefusals(
    _ missing: [String], of client: SimulatedClient, _ key: Int, _ problem: String
  ) throws {
    let refused = client.storage.refusedWriteCount(of: [keys[key]])
    if refused > 0, !everReadOnly.contains([client.index, key]) {
      throw failure("\(client.id) had \(refused) mutations of \(keys[key]) refused, never read-only")
    }
    if missing.count > refused {
      throw failure(
        "mutation \(missing[0]) of \(client.id) \(problem) (\(missing.count) missing, \(refused) refused)")
    }
  }

  /// At a restart: which confirmed mutations can survive it (in the loaded data, or in the
  /// newest copy a live client that may write the key holds). A live client's must, unless it
  /// may not write the key; a dead client's may be lost.
  private func declareLosses() throws {
    // etcd loses nothing: only a single broker's restart can.
    guard etcd == nil, let core = brokers[0] else { return }
    for (keyIndex, key) in keys.enumerated() {
      var kept = Set<String>()
      if let entry = core.entries[key], !entry.value.isEmpty {
        kept.formUnion(try QuickJSONDecoder().decode(Tally.self, from: entry.value).counts.keys)
      }
      // A client that may not write the key now cannot offer its copy (an adopted copy is a
      // write), and may not be let back in before the new run stops collecting copies.
      let mayOffer = { (client: SimulatedClient) in
        !self.revoked.contains(client.index) && self.readOnly[client.index] != keyIndex
      }
      let holders = clients.filter {
        $0.alive && mayOffer($0) && $0.machine.keys[keyIndex].instance != nil
      }
      let newest = holders.map { $0.machine.keys[keyIndex] }.max { x, y in
        (x.instance!, x.version) < (y.instance!, y.version)
      }
      if let newest {
        let confirmed =
          if newest.undecoded, let data = newest.confirmedData {
            try QuickJSONDecoder().decode(Tally.self, from: data)
          } else {
            newest.confirmed.as(Tally.self)
          }
        kept.formUnion(confirmed.counts.keys)
      }
      for client in clients {
        let gone = client.confirmedTags(keyIndex).filter { !kept.contains($0) }
        guard !client.alive || !mayOffer(client) else {
          // Refused mutations count as confirmed (they are no longer pending), but no copy has them.
          try checkRefusals(gone, of: client, keyIndex, "has no copy left")
          continue
        }
        lost.formUnion(gone)
      }
    }
  }

  /// After the faults: heals the world, then waits until every live client holds the broker's
  /// value with nothing pending.
  private func check() throws {
    if faultsActive {
      faultsActive = false
      healedAt = now
      note { "faults stop" }
      electionUntil = min(electionUntil, now)
      for number in brokers.indices {
        cutFromEtcd[number] = min(cutFromEtcd[number], now)
        guard brokers[number] == nil else { continue }
        try startBroker(number, withData: usesData, cutLog: false)
        try declareLosses()
      }
    }
    schedule(after: .milliseconds(100), .check)
    // Brokers still deciding requests of clients that moved on have not settled either, nor
    // one that still judges etcd unavailable (its verdict turns at its next answered probe), nor
    // one whose verdict rests on questions sent before the world healed (the ones sent while it
    // was cut off may still fail and turn it, for a moment, to unavailable).
    guard settledAt == nil, pendingSpawns == 0, pendingRestores == 0, let instance,
      brokers.allSatisfy({ $0?.isIdle ?? false }),
      brokers.indices.allSatisfy({
        brokers[$0] == nil
          || (availability[$0]?.isAvailable ?? true)
            && (etcd == nil || lastAnsweredQuestion[$0] >= healedAt)
      })
    else { return }
    let entries = authoritative
    for (keyIndex, key) in keys.enumerated() {
      let entry = entries[key]
      for client in clients where client.alive {
        // A client spawned at this instant takes its keys at its first turn, still to come.
        guard client.machine.keys.indices.contains(keyIndex) else { return }
        let machine = client.machine.keys[keyIndex]
        // Nothing on its way either: a request delayed from the faults would still be answered.
        guard client.dealerUp, client.subscribed, client.machine.isConnected,
          client.lastDealerOut <= now, client.lastDealerIn <= now,
          brokers[client.broker] != nil, client.subscriberBroker == client.broker,
          client.machine.brokerInstance == instance, machine.isSynced,
          !machine.hasUnconfirmedWrites, client.storage.unconfirmedWriteCount(of: [key]) == 0,
          machine.instance == instance, machine.version == entry?.version ?? 0
        else { return }
      }
    }
    settledAt = now
    outcome.settled = now - activeFor
    for client in clients { client.requestsSent = 0 }
    note { "settled" }
  }

  private func finalChecks() throws {
    guard let settledAt, instance != nil else { throw failure("never settled: \(state())") }
    if commitsAfterSettling > 0 {
      throw failure("the brokers sent \(commitsAfterSettling) commits after the world settled")
    }
    let entries = authoritative
    for (key, entry) in entries {
      try checkBrokerValue(key, entry.value)
      // Memory: the broker's records per key stay within their bounds.
      if (entry.recent?.count ?? 0) > 2 * BrokerEntry.recentWrites
        || entry.lastWrites.count > clients.count
      {
        throw failure(
          "the broker keeps \(entry.recent?.count ?? 0) recent writes and \(entry.lastWrites.count) writers of \(key)"
        )
      }
    }
    for client in clients where client.alive && client.requestsSent > 0 {
      throw failure(
        "\(client.id) sent \(client.requestsSent) requests other than heartbeats in the \(quietTail) after "
          + "it settled at \(settledAt)"
      )
    }
    for (keyIndex, key) in keys.enumerated() {
      let value = entries[key]?.value ?? Data()
      let tally = value.isEmpty ? Tally() : try QuickJSONDecoder().decode(Tally.self, from: value)
      if tally.outOfOrder > 0 {
        throw failure("\(tally.outOfOrder) mutations of \(key) were applied after a later one")
      }
      for client in clients {
        let confirmed = client.confirmedTags(keyIndex)
        for tag in client.tags[keyIndex] {
          let count = tally.counts[tag] ?? 0
          if count > 1 {
            throw failure("mutation \(tag) is in the final \(key) \(count) times")
          }
        }
        // Missing: a live client's mutations, a dead one's the broker confirmed; unless lost
        // with a broker's data, or refused.
        let missing = (client.alive ? client.tags[keyIndex][...] : confirmed).filter {
          tally.counts[$0] == nil && !lost.contains($0)
        }
        try checkRefusals(missing, of: client, keyIndex, "is not in the final \(key)")
        if client.alive, let handshake = client.storage.withConnection(\.handshakeFailure) {
          throw failure("\(client.id) still reports a failed handshake: \(handshake.reason)")
        }
        if client.alive {
          // What a screen shows: its observers heard of the settled value without a read.
          let told = client.told.last[keyIndex]
          guard told == tally else {
            throw failure(
              "\(client.id)'s observers were last told of \(told.counts.count) mutations of \(key), "
                + "the broker holds \(tally.counts.count)"
            )
          }
          // As the user reads it, brought up to date.
          let local = client.references[keyIndex].liveValue
          guard local == tally else {
            throw failure(
              "\(client.id) shows \(local.counts.count) mutations, the broker \(tally.counts.count)"
            )
          }
        }
      }
    }
  }

  // MARK: - Scheduling and tracing

  private func schedule(after delay: Duration, _ event: Event) {
    schedule(at: now + max(delay, .zero), event)
  }

  private func schedule(at time: Duration, _ event: Event) {
    sequence += 1
    queue.insert(Scheduled(time: max(time, now), sequence: sequence))
    events[sequence] = event
  }

  private func note(_ line: () -> String) {
    guard tracing else { return }
    trace.append("\(now) \(line())")
  }

  private func describe(_ frames: [Data]) -> String {
    (try? BrokerMessage(frames: frames)).map { "\($0)" } ?? "\(frames.count) frames"
  }

  private func state() -> String {
    let entries = authoritative
    let broker =
      instance == nil
      ? "down" : keys.map { "\($0)@\(entries[$0]?.version ?? 0)" }.joined(separator: " ")
    let views = clients.filter(\.alive).map { client in
      let keys = client.machine.keys.map { key in
        "\(key.key)@\(key.version) \(key.phase) pending \(key.unconfirmedWriteCount)"
      }
      return
        "\(client.id.prefix(4)) \(client.machine.isConnected ? "connected" : "not connected") \(keys)"
    }
    return "broker \(broker); " + views.joined(separator: "; ")
  }

  /// The keys as the world holds them: the single broker's, or etcd's.
  private var authoritative: [String: BrokerEntry] {
    etcd.map { $0.decoded.mapValues(\.entry) } ?? brokers[0]?.entries ?? [:]
  }

  /// The instance clients must end up talking to: the single broker's, or the cluster's.
  private var instance: String? {
    etcd?.instance ?? brokers[0]?.instance
  }

  private func failure(_ reason: String) -> Failure {
    Failure(seed: seed, reason: reason)
  }
}

/// A simulated client's sockets: what its storage sends goes on the simulation's network.
private struct Transport: ClientTransport {
  let simulation: Simulation
  let client: SimulatedClient

  func send(_ message: BrokerMessage) -> Bool {
    simulation.clientSends(message, from: client)
  }

  /// The simulation's SUB subscribes to every key it is given (``Simulation`` models when a
  /// subscription takes effect).
  func subscribe(to key: String) {}

  func connectDealer(to endpoint: String, from old: String) {
    simulation.connectDealer(client, to: endpoint)
  }

  func connectSubscriber(to endpoint: String, from old: String?) -> Bool {
    simulation.connectSubscriber(client)
    return true
  }

  func disconnectSubscriber(from endpoint: String) {
    simulation.disconnectSubscriber(client)
  }
}
