public import Etcd
public import Foundation
public import Logging
import Metrics
internal import NIOCore
public import SharedBrokerServer
import Synchronization

/// The store that several brokers share through etcd: one etcd key per shared key, holding the
/// key's value, version and exactly-once records, written with a transaction that compares the
/// key's revision, so a write applied through one broker is seen, and never applied again,
/// through every other.
///
/// Each broker watches the keys and publishes, to its own subscribers, what the others wrote, in
/// etcd's order; a watch that is cut resumes from the revision after the last one it delivered,
/// and one whose revision etcd compacted away reads every key again. A probe every half second
/// tells whether etcd's quorum answers: while it does not, the broker refuses writes and tells its
/// clients to move to another broker.
///
/// Each broker registers its ROUTER endpoint under `brokers/` with a lease it keeps alive, so a
/// broker that dies drops out when the lease runs out (5 s) and one that stops drops out at
/// once; the probe reads the list, and the broker tells its clients, who move among them.
///
/// ```swift
/// let store = try await EtcdBrokerStore.connect(endpoints: ["http://127.0.0.1:2379"])
/// let broker = BrokerServer(configuration: configuration, cluster: store)
/// try broker.start()
/// ```
public final class EtcdBrokerStore: BrokerCluster {
  /// The id of the cluster's data, made by the first broker that found etcd without one. Every
  /// broker of the cluster announces it as its instance.
  public let instance: String
  /// etcd's client.
  public let etcd: EtcdClient
  private let keysPrefix: Data
  /// Where the brokers register, one key each.
  private let brokersPrefix: Data
  private let logger: Logger
  /// How long a broker that stopped renewing its registration stays listed.
  private let memberLease = 5

  private struct State {
    /// What the broker has not taken yet, in order.
    var events: [BrokerClusterEvent] = []
    var availability: ClusterAvailability
    /// The brokers the newest probe answered found registered, and when it was sent.
    var members: (list: [String], sent: ContinuousClock.Instant)?
    /// This broker's registration, while it holds one.
    var lease: Int64?
    var wake: (@Sendable () -> Void)?
    var tasks: [Task<Void, Never>] = []
    var closed = false
  }
  private let state: Mutex<State>
  /// The revision the watch resumes from: one past the last change it delivered.
  private let resumeWatch = Atomic<Int64>(0)

  /// How long etcd may go without answering before the broker calls itself unavailable.
  private let unavailableAfter: Duration

  /// Each commit's transaction, from the broker's call to etcd's answer, and those that got no
  /// answer (etcd unreachable, or no leader in time).
  private let commitDuration = Metrics.Timer(label: "sharedmirror_etcd_commit_duration_seconds")
  private let commitFailures = Counter(label: "sharedmirror_etcd_commit_failures_total")

  private init(
    instance: String, etcd: EtcdClient, prefix: String, unavailableAfter: Duration, logger: Logger
  ) {
    self.instance = instance
    self.etcd = etcd
    self.unavailableAfter = unavailableAfter
    state = Mutex(State(availability: ClusterAvailability(unavailableAfter: unavailableAfter, now: .now)))
    self.keysPrefix = Data((prefix + "keys/").utf8)
    self.brokersPrefix = Data((prefix + "brokers/").utf8)
    self.logger = logger
  }

  /// Connects to etcd and reads the cluster's id, making one if etcd has none yet.
  ///
  /// - Parameters:
  ///   - endpoints: etcd's client URLs (`http://HOST:PORT`, or `https://` with `tls`).
  ///   - prefix: Where in etcd's key space the cluster keeps its keys.
  ///   - requestTimeout: How long one request may take on one etcd member.
  ///   - unavailableAfter: How long etcd may go without answering before the broker refuses
  ///     requests and tells its clients to move: longer than an election (etcd elects a new
  ///     leader about a second after losing one), so that clients stay through one while their
  ///     writes wait.
  ///   - logger: Where to log lost and regained contact.
  ///   - tls: How to speak TLS to etcd, or `nil` for plain HTTP.
  public static func connect(
    endpoints: [String], prefix: String = "/sharedmirror/",
    requestTimeout: Duration = .milliseconds(500), unavailableAfter: Duration = .seconds(3),
    logger: Logger = Logger(label: "broker.etcd"), tls: EtcdTLS? = nil
  ) async throws -> EtcdBrokerStore {
    let etcd = try EtcdClient(endpoints: endpoints, requestTimeout: requestTimeout, tls: tls)
    do {
      let key = Data((prefix + "cluster").utf8)
      let created = Data(BrokerServer.newInstanceID().utf8)
      let result = try await etcd.transaction(
        compare: [.createRevision(of: key, equals: 0)], success: [.put(key, created)],
        failure: [.range(key)])
      let instance =
        result.succeeded ? created : result.ranges.first?.first?.value ?? created
      return EtcdBrokerStore(
        instance: String(decoding: instance, as: UTF8.self), etcd: etcd, prefix: prefix,
        unavailableAfter: unavailableAfter, logger: logger)
    } catch {
      try? await etcd.shutdown()
      throw error
    }
  }

  /// Parses `etcd://HOST:PORT[,HOST:PORT...]` (the broker's `--store`) into client URLs.
  ///
  /// - Parameters:
  ///   - text: The store's text.
  ///   - tls: Whether etcd speaks TLS (`https://` URLs).
  /// - Returns: `nil` when the text is not such a URL.
  public static func endpoints(fromStore text: String, tls: Bool = false) -> [String]? {
    guard text.hasPrefix("etcd://") else { return nil }
    let members = text.dropFirst("etcd://".count).split(
      separator: ",", omittingEmptySubsequences: false)
    guard !members.isEmpty else { return nil }
    var endpoints: [String] = []
    for member in members {
      guard let colon = member.lastIndex(of: ":"), colon != member.startIndex,
        let port = Int(member[member.index(after: colon)...]), (1...65_535).contains(port),
        !member.contains("/")
      else { return nil }
      endpoints.append("\(tls ? "https" : "http")://\(member)")
    }
    return endpoints
  }

  // MARK: - BrokerCluster

  /// Whether etcd's quorum answered a question sent within the last `unavailableAfter` (asked
  /// every half second).
  public var isAvailable: Bool { state.withLock { $0.availability.isAvailable } }

  /// Called when events wait: a commit's answer, changes the watch brought, or availability.
  public func setWake(_ wake: @escaping @Sendable () -> Void) {
    state.withLock { $0.wake = wake }
  }

  /// Reads every key, then starts watching from the revision after that read.
  public func loadAll() throws -> [String: BrokerClusterRecord] {
    let (revision, keyValues) = try etcd.rangeFuture(keysPrefix, prefix: true).wait()
    var records: [String: BrokerClusterRecord] = [:]
    for change in changes(keyValues) { records[change.key] = change.record }
    startWatching(from: revision + 1)
    return records
  }

  /// One etcd transaction: compares the key's mod revision, puts the record when equal, and
  /// otherwise reads the key; a transport failure counts as etcd not answering. Its outcome is
  /// queued from the HTTP client's event loop.
  public func commit(key: String, record: Data?, expecting revision: Int64, id: UInt64) {
    let etcdKey = keysPrefix + Data(key.utf8)
    let started = ContinuousClock.now
    let completion: @Sendable (Result<BrokerClusterCommit, any Error>) -> Void = { [self] result in
      queue([.committed(id: id, result)])
    }
    etcd.transactionFuture(
      compare: [.modRevision(of: etcdKey, equals: revision)],
      success: record.map { [.put(etcdKey, $0)] } ?? [], failure: [.range(etcdKey)]
    ).whenComplete { [self] result in
      if case .success = result {
        commitDuration.record(duration: ContinuousClock.now - started)
        decide { $0.answered(sentAt: started, now: .now) }
      } else {
        commitFailures.increment()
      }
      switch result {
      case .success(let result) where result.succeeded:
        completion(.success(.stored(revision: record == nil ? revision : result.revision)))
      case .success(let result):
        let current = result.ranges.first?.first
        completion(
          .success(
            .changed(current.map { BrokerClusterRecord(data: $0.value, revision: $0.modRevision) }))
        )
      case .failure(let error):
        decide { $0.failed("\(error)", now: .now) }
        completion(.failure(error))
      }
    }
  }

  /// One etcd put, unconditional; a failure counts as etcd not answering.
  public func put(key: String, record: Data) {
    send(.put(keysPrefix + Data(key.utf8), record))
  }

  /// One etcd delete, unconditional; a failure counts as etcd not answering.
  public func remove(key: String) {
    send(.delete(keysPrefix + Data(key.utf8)))
  }

  /// One operation that nothing waits for, whose answer only tells whether etcd answers.
  private func send(_ operation: EtcdClient.Operation) {
    let sent = ContinuousClock.now
    etcd.transactionFuture(compare: [], success: [operation], failure: [])
      .whenComplete { [self] result in
        switch result {
        case .failure(let error): decide { $0.failed("\(error)", now: .now) }
        case .success: decide { $0.answered(sentAt: sent, now: .now) }
        }
      }
  }

  /// The events since the last call, in order.
  public func takeEvents() -> [BrokerClusterEvent] {
    state.withLock { state in
      defer { state.events = [] }
      return state.events
    }
  }

  /// Queues `events` for the broker and wakes it.
  private func queue(_ events: [BrokerClusterEvent]) {
    let wake = state.withLock { state in
      state.events += events
      return state.wake
    }
    wake?()
  }

  /// Stops watching and probing, takes this broker off the cluster's list, and closes the etcd
  /// client.
  public func close() {
    let (tasks, lease) = state.withLock { state in
      state.closed = true
      return (state.tasks, state.lease)
    }
    for task in tasks { task.cancel() }
    // Waited for (the broker's stop already waits for its thread), so that a broker that stops
    // is off the list before its process ends; the etcd client's event loop answers it, no task.
    // Not for longer than a second: with etcd down, each member would take its request timeout,
    // and the lease runs out by itself soon after.
    if let lease {
      let answered = DispatchSemaphore(value: 0)
      etcd.revokeLeaseFuture(lease).whenComplete { _ in answered.signal() }
      _ = answered.wait(timeout: .now() + 1)
    }
    // Not waited for: the broker may stop from a task of the cooperative pool, which must not
    // block on another task.
    Task { [etcd] in try? await etcd.shutdown() }
  }

  /// Registers `router` under `brokers/` with a lease, and renews it every third of its time to
  /// live; after an outage long enough for the lease to run out, registers again.
  public func register(router: String) {
    let key = brokersPrefix + Data(UUID().uuidString.utf8)
    let registering = Task { [self] in
      var lease: Int64?
      while !Task.isCancelled {
        do {
          if let held = lease, try await etcd.keepAlive(lease: held) > 0 {
            try? await Task.sleep(for: .seconds(memberLease) / 3)
            continue
          }
          let granted = try await etcd.grantLease(ttl: memberLease)
          try await etcd.put(key, Data(router.utf8), lease: granted)
          lease = granted
          let closed = state.withLock { state in
            state.lease = granted
            return state.closed
          }
          if closed { try? await etcd.revokeLease(granted) }
        } catch {
          try? await Task.sleep(for: .milliseconds(500))
        }
      }
    }
    state.withLock { $0.tasks.append(registering) }
  }

  // MARK: - Watching and probing

  private func startWatching(from revision: Int64) {
    let watching = Task { [self] in await watch(from: revision) }
    let probing = Task { [self] in await probe() }
    state.withLock { $0.tasks += [watching, probing] }
  }

  /// Follows every change of the keys, resuming after the last revision delivered.
  private func watch(from start: Int64) async {
    resumeWatch.store(start, ordering: .relaxed)
    while !Task.isCancelled {
      do {
        try await etcd.watch(prefix: keysPrefix, from: resumeWatch.load(ordering: .relaxed)) {
          [self] batch in
          // Only delivered changes move the resume point: a batch's header revision may be ahead
          // of changes still on their way (the first answer of a watch that starts in the past).
          if let last = batch.changes.map(\.modRevision).max() {
            resumeWatch.max(last + 1, ordering: .relaxed)
          }
          queue([.changed(changes(batch.changes), followsHistory: true)])
        }
      } catch EtcdError.compacted(let revision) {
        logger.warning(
          "etcd compacted the watched history; reading every key again",
          metadata: ["revision": "\(revision)"])
        if let (current, keyValues) = try? await etcd.range(keysPrefix, prefix: true) {
          queue([.changed(changes(keyValues), followsHistory: false)])
          resumeWatch.store(current + 1, ordering: .relaxed)
        }
      } catch {
        if Task.isCancelled { return }
        logger.debug(
          "etcd watch cut; resuming",
          metadata: ["revision": "\(resumeWatch.load(ordering: .relaxed))", "error": "\(error)"])
      }
      try? await Task.sleep(for: .milliseconds(200))
    }
  }

  /// Asks etcd's quorum every half second whether it answers, without waiting for one answer
  /// before the next question (see ``ClusterAvailability``); the question reads the registered
  /// brokers.
  private func probe() async {
    await withDiscardingTaskGroup { group in
      while !Task.isCancelled {
        let sent = ContinuousClock.now
        group.addTask { [self] in
          do {
            let (_, registered) = try await etcd.range(brokersPrefix, prefix: true)
            decide { $0.answered(sentAt: sent, now: .now) }
            found(Set(registered.map { String(decoding: $0.value, as: UTF8.self) }).sorted(), sentAt: sent)
          } catch {
            if !Task.isCancelled { decide { $0.failed("\(error)", now: .now) } }
          }
        }
        try? await Task.sleep(for: .milliseconds(500))
        decide { $0.tick(now: .now) }
      }
      group.cancelAll()
    }
  }

  /// Takes the brokers a probe sent at `sent` found, unless a newer probe answered first, and
  /// tells the broker when they changed.
  private func found(_ members: [String], sentAt sent: ContinuousClock.Instant) {
    let changed = state.withLock { state in
      if let last = state.members, last.sent > sent { return false }
      // The same list still moves the time on: an older probe that answers late must not
      // replace what a newer one found.
      let same = state.members?.list == members
      state.members = (members, sent)
      return !same && !state.closed
    }
    if changed { queue([.members(members)]) }
  }

  /// Feeds one event to the availability machine, and tells the broker and the log when its
  /// verdict turns (not once the store is closed).
  private func decide(_ event: (inout ClusterAvailability) -> ClusterAvailability.Change?) {
    let change = state.withLock { state in
      let change = event(&state.availability)
      return state.closed ? nil : change
    }
    switch change {
    case nil:
      return
    case .available:
      queue([.availability(true)])
      logger.notice("etcd answers again")
    case .unavailable(let reason):
      queue([.availability(false)])
      logger.error(
        "etcd unreachable: answering clients unavailable",
        metadata: ["for": "\(unavailableAfter)", "error": "\(reason ?? "no answer")"])
    }
  }

  /// The shared keys' records among etcd's `keyValues` (others under the prefix are left out).
  private func changes(_ keyValues: [EtcdKeyValue]) -> [(key: String, record: BrokerClusterRecord)]
  {
    keyValues.compactMap { keyValue in
      sharedKey(keyValue.key).map {
        (
          key: $0,
          record: BrokerClusterRecord(data: keyValue.value, revision: keyValue.modRevision)
        )
      }
    }
  }

  private func sharedKey(_ etcdKey: Data) -> String? {
    guard etcdKey.starts(with: keysPrefix) else { return nil }
    return String(bytes: etcdKey.dropFirst(keysPrefix.count), encoding: .utf8)
  }
}
