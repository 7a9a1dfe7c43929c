import Foundation
public import Logging
public import ServiceLifecycle
import Synchronization
internal import ZeroMQ

/// The broker: keeps the last value of every key, applies compare-and-set writes, publishes
/// every change, and answers snapshots to late joiners.
///
/// ```swift
/// let broker = BrokerServer(configuration: .init(listen: "tcp://127.0.0.1:*"), logger: logger)
/// let endpoints = try broker.start()
/// ...
/// broker.stop()
/// ```
///
/// As a `Service` it runs until cancelled or shut down gracefully. One thread owns its sockets;
/// bad input is counted in ``statistics`` and answered with an `ERROR`, never a crash.
public final class BrokerServer: Service, Sendable {
  private enum Phase {
    case idle
    case running(IOThread, WakeUpSignal, BrokerEndpoints)
    case stopped
  }

  /// The configuration.
  public let configuration: BrokerConfiguration
  /// A new id on every start, so clients notice a restart. Ids sort in start order (the start
  /// time in microseconds, then a random part), which orders the copies clients seed from.
  /// A broker of a cluster announces the cluster's id instead (``BrokerCluster/instance``), so
  /// that its clients can move to another broker of the cluster and keep their versions.
  public let instance: String = BrokerServer.newInstanceID()

  /// A new instance id: the time in microseconds (17 digits), a dash and a random part.
  package static func newInstanceID() -> String {
    let micros = UInt64(Date().timeIntervalSince1970 * 1_000_000)
    let decimal = String(micros)
    let random = UUID().uuidString.prefix(8).lowercased()
    return String(repeating: "0", count: max(0, 17 - decimal.count)) + decimal + "-" + random
  }
  private let logger: Logger
  /// The store shared with the other brokers of a cluster, if any.
  private let cluster: (any BrokerCluster)?
  private let phase = Mutex<Phase>(.idle)
  /// The allow-list last handed to the broker thread (`nil` without CURVE), which a reload's
  /// changes are told against. The list in force is the machine's: requests, subscriptions and
  /// the ZAP handler read that one, on the broker thread.
  private let allowList: Mutex<AllowList?>
  /// A reloaded allow-list the broker thread has yet to take, and whether it takes anything
  /// from a key that had it.
  private let pendingAllowList = Mutex<(list: AllowList, narrows: Bool)?>(nil)
  private let stopRequested = Atomic<Bool>(false)
  private let counters = Mutex(BrokerStatistics())
  /// The statistics as swift-metrics, reported from the broker thread every `reportInterval`
  /// (and at least once a second, when it wakes with nothing to do).
  private let metrics = BrokerMetrics()
  private static let reportInterval = Duration.milliseconds(250)
  /// Time since the broker was created, on the clock it was given (a test clock in tests).
  private let elapsed: @Sendable () -> Duration

  /// Creates a broker; nothing listens until ``start()`` or ``run()``.
  ///
  /// - Parameters:
  ///   - configuration: Endpoints and data directory.
  ///   - logger: Where to log.
  ///   - clock: The clock that times client silence (``BrokerConfiguration/clientTimeout``).
  public convenience init(
    configuration: BrokerConfiguration, logger: Logger = Logger(label: "broker"),
    clock: any Clock<Duration> = ContinuousClock()
  ) {
    self.init(configuration: configuration, cluster: nil, logger: logger, clock: clock)
  }

  /// Creates a broker whose keys live in a store it shares with other brokers, such as
  /// `EtcdBrokerStore` (it ignores the configuration's data directory); the broker closes the
  /// store when it stops.
  ///
  /// - Parameters:
  ///   - configuration: Endpoints and limits.
  ///   - cluster: The shared store, or `nil` for the broker's own (memory or data directory).
  ///   - logger: Where to log.
  ///   - clock: The clock that times client silence.
  public init(
    configuration: BrokerConfiguration, cluster: (any BrokerCluster)?,
    logger: Logger = Logger(label: "broker"), clock: any Clock<Duration> = ContinuousClock()
  ) {
    self.configuration = configuration
    self.allowList = Mutex(configuration.curve?.allowList)
    self.cluster = cluster
    self.logger = logger
    self.elapsed = Self.stopwatch(clock)
  }

  private static func stopwatch<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
    let start = clock.now
    return { start.duration(to: clock.now) }
  }

  /// What the broker has counted so far.
  public var statistics: BrokerStatistics { counters.withLock { $0 } }

  /// The bound endpoints, once started.
  public var endpoints: BrokerEndpoints? {
    phase.withLock { phase in
      if case .running(_, _, let endpoints) = phase { return endpoints }
      return nil
    }
  }

  // MARK: - Lifecycle

  /// Loads the data, binds the sockets and starts serving on a thread of its own.
  ///
  /// - Returns: The endpoints actually bound.
  /// - Throws: ``BrokerStartError`` naming the endpoint that cannot be bound or the data
  ///   directory that cannot be read or written, and why.
  @discardableResult
  public func start() throws -> BrokerEndpoints {
    let wake = try WakeUpSignal()
    let backend: BrokerCore.Backend
    let machine: BrokerMachine
    let placeholder = "inproc://unbound"
    if let cluster {
      let driver = ClusterDriver(cluster: cluster, run: instance)
      cluster.setWake { [wake] in wake.signal() }
      do {
        let loaded = try driver.loadAll()
        machine = BrokerMachine(
          instance: cluster.instance, run: instance, backend: .cluster,
          configuration: configuration, publisherEndpoint: placeholder,
          records: loaded.records, heard: loaded.heard, now: elapsed(),
          startedAt: Int64(Date().timeIntervalSince1970 * 1_000) - elapsed().milliseconds)
      } catch {
        throw BrokerStartError.cluster(error)
      }
      backend = .cluster(driver)
    } else {
      let log: BrokerLog
      do {
        log = try BrokerLog(directory: configuration.dataDirectory)
      } catch {
        throw BrokerStartError.dataDirectory(configuration.dataDirectory?.path ?? "", error)
      }
      machine = BrokerMachine(
        instance: instance, run: instance,
        backend: configuration.dataDirectory == nil ? .memory : .log, configuration: configuration,
        publisherEndpoint: placeholder, entries: log.loaded, now: elapsed())
      backend = .log(log)
    }
    let ready = Mutex<
      Result<(BrokerEndpoints, budget: ConnectionBudget, openFileLimit: Int), any Error>?
    >(nil)
    let bound = DispatchSemaphore(value: 0)
    let owned = UncheckedOwned(machine: machine, backend: backend)
    let thread = IOThread(name: "sm-broker") { [self] in
      do {
        let context = try Context()
        defer { context.terminate() }
        // The ZAP handler must exist before any CURVE socket binds: without it libzmq admits
        // every client key.
        let zap = try configuration.curve.map { _ in
          let zap = try Socket(context: context, type: .rep)
          try zap.bind("inproc://zeromq.zap.01")
          return zap
        }
        let (router, publisher) = try bindSockets(context)
        let monitor = try SocketMonitor(watching: router, context: context)
        let publisherMonitor = try SocketMonitor(watching: publisher, context: context)
        defer {
          monitor.close()
          publisherMonitor.close()
          router.close()
          publisher.close()
          zap?.close()
        }
        let endpoints = BrokerEndpoints(
          router: try router.lastEndpoint, publisher: try publisher.lastEndpoint
        )
        let files = Self.openFiles()
        let budget = ConnectionBudget(
          clients: ConnectionBudget.clients(openFileLimit: files.limit, inUse: files.inUse))
        ready.withLock { $0 = .success((endpoints, budget, files.limit)) }
        bound.signal()
        var machine = owned.machine
        machine.publisherEndpoint = endpoints.publisher
        if cluster != nil, machine.advertised == nil {
          machine.advertised = advertised(bound: endpoints.router)
        }
        serve(
          router: router, publisher: publisher,
          monitors: (router: monitor, publisher: publisherMonitor, budget: budget), zap: zap,
          wake: wake, machine: machine, backend: owned.backend)
      } catch {
        ready.withLock { $0 = .failure(error) }
        bound.signal()
      }
    }
    bound.wait()
    let (endpoints, budget, openFileLimit) = try ready.withLock { $0! }.get()
    phase.withLock { $0 = .running(thread, wake, endpoints) }
    cluster?.register(router: advertised(bound: endpoints.router))
    // Whether the permissions parsed as meant shows at a glance: how many keys are limited.
    let curve = configuration.curve.map { curve in
      let entries = curve.allowList.entries
      let limited = entries.values.filter { $0 != .all }.count
      return "on, allow-list of \(entries.count)"
        + (limited > 0 ? " (\(limited) limited by read= or write=)" : "")
    }
    var metadata: Logger.Metadata = [
      "router": "\(endpoints.router)", "publisher": "\(endpoints.publisher)",
      "data": "\(cluster != nil ? "cluster" : configuration.dataDirectory?.path ?? "memory only")",
      "instance": "\(machine.instance)",
      "keys": "\(machine.statistics.keys)",
      "curve": "\(curve ?? "off")",
      "capacity": "\(budget.clients) clients (open-file limit \(openFileLimit))",
    ]
    // What the cluster's clients are told to reach this broker at.
    if cluster != nil { metadata["advertised"] = "\(advertised(bound: endpoints.router))" }
    logger.info("Broker listening", metadata: metadata)
    if configuration.curve?.allowedClientKeys.isEmpty == true {
      logger.warning("The CURVE allow-list is empty: every client will be denied")
    }
    return endpoints
  }

  /// Where this broker's clients reach it, as registered in its cluster's store.
  private func advertised(bound router: String) -> String {
    configuration.advertised(bound: router, hostName: ProcessInfo.processInfo.hostName)
  }

  /// Replaces the CURVE allow-list (the broker's `SIGHUP`), without dropping any client whose key
  /// is still on it. A removed key's connections are answered `forbidden` from their next
  /// request on, and new connections with it are denied. When a key loses a permission, every
  /// subscriber's connection is shut down: each one reconnects at once and is granted its
  /// subscriptions anew, under the new list, and catches up on what it missed meanwhile as
  /// after any gap (PROTOCOL.md).
  ///
  /// - Returns: What changed, or `nil` for a broker without CURVE (which has no list).
  @discardableResult
  public func reloadAllowList(_ list: AllowList) -> AllowListChanges? {
    let changes: AllowListChanges? = allowList.withLock { current in
      guard let old = current else { return nil }
      current = list
      return list.changes(from: old)
    }
    guard let changes, !changes.isEmpty else { return changes }
    let narrows = !changes.removed.isEmpty || !changes.changed.isEmpty
    pendingAllowList.withLock { pending in
      pending = (list, narrows || pending?.narrows == true)
    }
    phase.withLock { phase in
      if case .running(_, let wake, _) = phase { wake.signal() }
    }
    return changes
  }

  /// Stops serving and waits for the thread to close its sockets. Safe to call more than once.
  public func stop() {
    let thread: IOThread? = phase.withLock { phase in
      guard case .running(let thread, let wake, _) = phase else { return nil }
      stopRequested.store(true, ordering: .sequentiallyConsistent)
      wake.signal()
      phase = .stopped
      return thread
    }
    thread?.joinBlocking()
    cluster?.close()
  }

  /// Runs until the task is cancelled or the service group shuts down gracefully.
  public func run() async throws {
    if endpoints == nil { try start() }
    await withGracefulShutdownHandler {
      await withTaskCancellationHandler {
        await waitUntilStopped()
      } onCancel: {
        stop()
      }
    } onGracefulShutdown: {
      self.stop()
    }
    logger.info("Broker stopped")
  }

  private func waitUntilStopped() async {
    let thread: IOThread? = phase.withLock { phase in
      if case .running(let thread, _, _) = phase { return thread }
      return nil
    }
    await thread?.join()
  }

  // MARK: - Serving

  private func bindSockets(_ context: Context) throws -> (Socket, Socket) {
    let router = try Socket(context: context, type: .router)
    try secure(router)
    try router.set(.maxMessageSize, Int64(configuration.maxValueSize + 64 * 1024))
    try router.set(.sendHighWaterMark, 100_000)
    // Per connection: a client that floods the broker waits on its own queue (libzmq stops
    // reading its TCP stream), while the ROUTER keeps taking one message from each in turn.
    try router.set(.receiveHighWaterMark, 1_000)
    do {
      try router.bind(configuration.listen)
    } catch {
      throw BrokerStartError.bind(.listen, configuration.listen, error)
    }
    // An XPUB whose subscriptions the broker grants itself, by the subscriber's permissions.
    let publisher = try Socket(context: context, type: .xpub)
    try publisher.set(.xpubManual, 1)
    try secure(publisher)
    // Per subscriber, and before bind: libzmq copies it into each connection's pipe.
    try publisher.set(.sendHighWaterMark, Int32(clamping: configuration.maxQueuedUpdates))
    do {
      try publisher.bind(configuration.publishEndpoint)
    } catch {
      throw BrokerStartError.bind(
        configuration.publish == nil ? .derivedPublish : .publish, configuration.publishEndpoint,
        error
      )
    }
    return (router, publisher)
  }

  private func secure(_ socket: Socket) throws {
    guard let curve = configuration.curve else { return }
    try socket.set(.curveServer, 1)
    try socket.set(.curveSecretKey, try CurveKeyPair.decode(curve.secretKey))
    try socket.set(.zapDomain, Array("sharedmirror".utf8))
  }

  /// Answers every waiting ZAP request (RFC 27): only CURVE clients whose key is on the
  /// allow-list pass. Stops at an empty receive, which leaves the socket's descriptor armed.
  private func authenticate(_ zap: Socket, _ core: BrokerCore) {
    while let request = try? zap.receive(dontWait: true) {
      guard request.count >= 6 else { continue }
      answer(request, on: zap, core)
    }
  }

  private func answer(_ request: [Data], on zap: Socket, _ core: BrokerCore) {
    let mechanism = String(decoding: request[5], as: UTF8.self)
    let key = request.count >= 7 ? CurveKeyPair.encode(Array(request[6])) : ""
    let allowed = mechanism == "CURVE" && core.machine.allowList?.entries[key] != nil
    if !allowed {
      core.deniedClient()
      logger.warning(
        "Denied a client",
        metadata: ["mechanism": "\(mechanism)", "key": "\(key.isEmpty ? "none" : key)"]
      )
    }
    _ = try? zap.send([
      request[0], request[1], Data((allowed ? "200" : "400").utf8),
      Data((allowed ? "OK" : "client key not allowed").utf8), Data((allowed ? key : "").utf8),
      Data(),
    ])
  }

  /// Grants or withdraws every waiting subscription (the XPUB is manual): a subscriber gets the
  /// topics its key's permissions allow (see ``KeyPermissions``), none once its key is off the
  /// list. Stops at an empty receive, which leaves the socket's descriptor armed.
  private func grantSubscriptions(_ publisher: Socket, _ core: BrokerCore) {
    var frames: [Data] = []
    var clientKey: String?
    while (try? publisher.receive(into: &frames, userID: &clientKey, dontWait: true)) == true {
      guard frames.count == 1, let kind = frames[0].first, kind <= 1 else { continue }
      let permissions: KeyPermissions? =
        if let list = core.machine.allowList { clientKey.flatMap { list.entries[$0] } } else {
          .all
        }
      guard let permissions else { continue }
      for topic in permissions.topics(granting: Array(frames[0].dropFirst())) {
        try? publisher.set(kind == 1 ? .subscribe : .unsubscribe, topic)
      }
    }
  }

  /// Takes a reloaded allow-list; if it took a permission from a key, shuts down every
  /// subscriber's connection, so that each is granted its subscriptions anew.
  private func takeAllowList(_ core: BrokerCore, _ budget: ConnectionBudget) {
    guard let (list, narrows) = pendingAllowList.withLock({ $0.take() }) else { return }
    core.setAllowList(list)
    guard narrows else { return }
    for descriptor in budget.open(on: .publisher) {
      shutdown(Int32(bitPattern: descriptor), Int32(SHUT_RDWR))
    }
  }

  /// Counts the connections `listener` took in and lost, until no event is left, and shuts
  /// down at once those past the budget.
  private func countConnections(
    _ monitor: SocketMonitor, _ listener: ConnectionBudget.Listener,
    _ budget: inout ConnectionBudget, _ core: BrokerCore, at now: Duration
  ) {
    let refusedBefore = budget.refused
    while let event = try? monitor.receive() {
      switch event.kind {
      case .accepted:
        if listener == .router { core.connection(opened: true) }
        guard case .refuse(let log) = budget.accepted(event.value, on: listener, at: now) else {
          continue
        }
        // Not closed: the descriptor is libzmq's. It sees the connection end, and closes it.
        shutdown(Int32(bitPattern: event.value), Int32(SHUT_RDWR))
        if log {
          logger.warning(
            "At capacity: refusing new connections",
            metadata: [
              "clients": "\(budget.clients)", "refused": "\(budget.refusedSinceLog)",
              "hint": "raise the open-file limit (ulimit -n) for more clients",
            ])
          budget.logged()
        }
      case .disconnected:
        if listener == .router { core.connection(opened: false) }
        budget.disconnected(event.value, on: listener)
      default: break
      }
    }
    if budget.refused != refusedBefore {
      core.rejectedConnections(budget.refused, capacity: budget.clients)
    }
  }

  private func serve(
    router: Socket, publisher: Socket,
    monitors: (router: SocketMonitor, publisher: SocketMonitor, budget: ConnectionBudget),
    zap: Socket?, wake: WakeUpSignal, machine: BrokerMachine, backend: BrokerCore.Backend
  ) {
    let (monitor, publisherMonitor) = (monitors.router, monitors.publisher)
    var budget = monitors.budget
    // Whether the ROUTER was used since it last said it had nothing: a send takes in libzmq's
    // pending commands, and with them the signal of its descriptor, so it is asked before the
    // thread sleeps (answers released by the store go out between receives).
    let transport = SocketTransport(router: router, publisher: publisher)
    let core = BrokerCore(
      machine: machine, backend: backend, transport: transport,
      counted: { [self] statistics in counters.withLock { $0 = statistics } },
      report: { [self] report in log(report) })
    var nextReport = Duration.zero
    // Each request's frames after the ROUTER's identity, in one buffer every request reuses,
    // and that identity: the connection it came from.
    var request = FrameBuffer()
    var peer = Data()
    // With CURVE, the public key of each request's connection.
    let curve = configuration.curve != nil
    var clientKey: String?
    // Every socket is polled by its ZMQ_FD, as the clients do: one `ppoll` per wake-up, where
    // `zmq_poll` makes a non-blocking pass first and asks each socket for its events before and
    // after it waits. The descriptor only signals commands nobody took in yet, so a socket used
    // since its last empty receive (a batch cut short, a reply sent) is asked before sleeping.
    var poller = Poller()
    let wakeIndex = poller.add(fileDescriptor: wake.fileDescriptor)
    let routerIndex: Int
    let publisherIndex: Int
    let monitorIndex: Int
    let publisherMonitorIndex: Int
    let zapIndex: Int?
    do {
      routerIndex = poller.add(fileDescriptor: try router.get(.fileDescriptor))
      // A new subscriber and its subscriptions reach the PUB socket as commands, which libzmq
      // takes in only when the socket is used, and then at most about once a millisecond. Asking
      // for its events when its descriptor signals takes them in at once, so a joining client's
      // SYNC finds its subscription in effect sooner.
      publisherIndex = poller.add(fileDescriptor: try publisher.get(.fileDescriptor))
      monitorIndex = poller.add(fileDescriptor: try monitor.socket.get(.fileDescriptor))
      publisherMonitorIndex = poller.add(
        fileDescriptor: try publisherMonitor.socket.get(.fileDescriptor))
      zapIndex = try zap.map { poller.add(fileDescriptor: try $0.get(.fileDescriptor)) }
    } catch {
      logger.error("Broker sockets unusable", metadata: ["error": "\(error)"])
      return
    }
    // The ZAP socket and the monitor are only ever drained to empty, so their descriptors stay
    // armed after this.
    if let zap { authenticate(zap, core) }
    grantSubscriptions(publisher, core)
    core.rejectedConnections(0, capacity: budget.clients)
    countConnections(monitor, .router, &budget, core, at: elapsed())
    countConnections(publisherMonitor, .publisher, &budget, core, at: elapsed())
    while !stopRequested.load(ordering: .sequentiallyConsistent) {
      do {
        if transport.subscriptionsDue {
          transport.subscriptionsAsked()
          grantSubscriptions(publisher, core)
        }
        let routerWaiting = transport.routerTouched && router.hasInput
        let ready = try poller.poll(timeout: routerWaiting ? .zero : core.machine.tickInterval)
        if ready.contains(wakeIndex) {
          wake.clear()
          takeAllowList(core, budget)
          core.takeStoreEvents()
        }
        if ready.contains(publisherIndex) {
          transport.subscriptionsAsked()
          grantSubscriptions(publisher, core)
        }
        if let zap, let zapIndex, ready.contains(zapIndex) { authenticate(zap, core) }
        if ready.contains(monitorIndex) {
          countConnections(monitor, .router, &budget, core, at: elapsed())
        }
        if ready.contains(publisherMonitorIndex) {
          countConnections(publisherMonitor, .publisher, &budget, core, at: elapsed())
        }
        let now = elapsed()
        if now >= nextReport {
          metrics.report(core.statistics)
          nextReport = now + Self.reportInterval
        }
        core.tick(at: now)
        guard ready.contains(routerIndex) || routerWaiting else { continue }
        // Drain what is queued, a bounded batch at a time so a stop request is seen promptly.
        transport.routerTouched = true
        for drained in 0..<1_000 {
          guard
            try Self.receive(
              from: router, curve: curve, into: &request, from: &peer, userID: &clientKey)
          else {
            transport.routerTouched = false
            break
          }
          // The first request of a wake-up arrived by `now`, read just before: one clock read
          // (a generic clock's, about 280 instructions) fewer per request at a light load.
          core.receive(
            request, from: peer, clientKey: clientKey, at: drained == 0 ? now : elapsed())
        }
      } catch let error as ZMQError where error.isContextTerminated {
        return
      } catch {
        logger.error("Broker socket error", metadata: ["error": "\(error)"])
      }
    }
  }

  /// Receives a request waiting on the ROUTER: its identity frame into `peer`, the rest into
  /// `request`, and with CURVE its connection's key. Parameters rather than the loop's locals
  /// captured: those were boxed and checked for exclusive access on every frame.
  private static func receive(
    from router: Socket, curve: Bool, into request: inout FrameBuffer, from peer: inout Data,
    userID: inout String?
  ) throws -> Bool {
    request.removeAll()
    peer = Data()
    // A ROUTER's identity frame is never empty.
    let take = { (frame: UnsafeRawBufferPointer) in
      if peer.isEmpty { peer = Data(frame) } else { request.append(frame) }
    }
    return curve
      ? try router.receive(userID: &userID, dontWait: true, frame: take)
      : try router.receive(dontWait: true, frame: take)
  }

  private func log(_ report: BrokerMachine.Report) {
    switch report {
    case .rejectedRequest(let reason, let rejected):
      logger.warning(
        "Rejected request", metadata: ["reason": "\(reason)", "rejected so far": "\(rejected)"])
    case .oversized(let key, let bytes):
      logger.warning("Rejected oversized value", metadata: ["key": "\(key)", "bytes": "\(bytes)"])
    case .forgotClients(let count):
      logger.info("Forgot silent clients", metadata: ["count": "\(count)"])
    case .adopted(let key, let origin):
      logger.info(
        "Adopted a client's copy",
        metadata: [
          "key": "\(key)", "origin": "\(origin.instance)", "version": "\(origin.version)",
        ])
    case .storageFailed(let key, let reason):
      logger.error("Could not persist a write", metadata: ["key": "\(key)", "error": "\(reason)"])
    case .commitUnanswered(let key, let reason):
      // Expected while etcd elects a leader: a warning, not an error.
      logger.warning(
        "The cluster's store did not answer a commit; sending it again",
        metadata: ["key": "\(key)", "error": "\(reason)"])
    }
  }
}

/// The broker thread's sockets, as its ``BrokerCore`` reaches them.
private final class SocketTransport: BrokerTransport {
  let router: Socket
  let publisher: Socket
  /// The ROUTER was used since it last said it had nothing (see the serving loop).
  var routerTouched = true
  /// Messages the XPUB sent since its subscriptions were last taken: a send takes in libzmq's
  /// pending commands, subscriptions among them, without its descriptor signalling them.
  private var publishesUnasked = 0
  /// Whether one of them was a `SYNCED`: a client whose subscription it missed asks again.
  private var syncedUnasked = false
  /// How many publishes at most go by without asking the XPUB for the subscriptions they took
  /// in: asking costs system calls, which at a light load would come once per write. Only a
  /// subscriber that joins meanwhile waits: a `SYNCED` is asked about at once, and a
  /// subscriber that missed an update asks for the key's state.
  private static let publishesPerAsk = 8

  /// Whether the serving loop should take the XPUB's subscriptions before it sleeps.
  var subscriptionsDue: Bool { syncedUnasked || publishesUnasked >= Self.publishesPerAsk }

  /// The serving loop took the XPUB's subscriptions.
  func subscriptionsAsked() {
    publishesUnasked = 0
    syncedUnasked = false
  }
  /// The frames of the message being sent, kept between messages with their capacity.
  private var frames = FrameBuffer()

  init(router: Socket, publisher: Socket) {
    self.router = router
    self.publisher = publisher
  }

  func reply(_ message: BrokerMessage, to peer: Data) -> Int? {
    routerTouched = true
    return send(message, on: router, after: peer).map { $0 - peer.count }
  }

  func publish(_ message: BrokerMessage) -> Int? {
    publishesUnasked += 1
    if case .synced = message { syncedUnasked = true }
    return send(message, on: publisher)
  }

  /// Sends a message after `first` (a ROUTER's identity): the bytes sent, or `nil` if it could
  /// not be queued. Its frames go into one buffer kept for every message.
  private func send(_ message: BrokerMessage, on socket: Socket, after first: Data? = nil) -> Int?
  {
    var frames = FrameBuffer()
    swap(&frames, &self.frames)
    defer {
      frames.removeAll()
      swap(&frames, &self.frames)
    }
    if let first { frames.append(first) }
    message.encode(into: &frames)
    let sent = try? frames.send { try socket.send($0, more: $1, dontWait: true) }
    guard sent == true else { return nil }
    return frames.byteCount
  }
}

/// Hands the machine and the log, made on the caller's thread, to the broker thread that alone
/// uses them.
private struct UncheckedOwned: @unchecked Sendable {
  let machine: BrokerMachine
  let backend: BrokerCore.Backend
}
