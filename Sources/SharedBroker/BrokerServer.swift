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
  public let instance: String = {
    let micros = UInt64(Date().timeIntervalSince1970 * 1_000_000)
    let decimal = String(micros)
    let random = UUID().uuidString.prefix(8).lowercased()
    return String(repeating: "0", count: max(0, 17 - decimal.count)) + decimal + "-" + random
  }()
  private let logger: Logger
  private let phase = Mutex<Phase>(.idle)
  private let stopRequested = Atomic<Bool>(false)
  private let counters = Mutex(BrokerStatistics())
  /// Time since the broker was created, on the clock it was given (a test clock in tests).
  private let elapsed: @Sendable () -> Duration

  /// Creates a broker; nothing listens until ``start()`` or ``run()``.
  ///
  /// - Parameters:
  ///   - configuration: Endpoints and data directory.
  ///   - logger: Where to log.
  ///   - clock: The clock that times client silence (``BrokerConfiguration/clientTimeout``).
  public init(
    configuration: BrokerConfiguration, logger: Logger = Logger(label: "broker"),
    clock: any Clock<Duration> = ContinuousClock()
  ) {
    self.configuration = configuration
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
      if case let .running(_, _, endpoints) = phase { return endpoints }
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
    let store: BrokerStore
    do {
      store = try BrokerStore(directory: configuration.dataDirectory, instance: instance)
    } catch {
      throw BrokerStartError.dataDirectory(configuration.dataDirectory?.path ?? "", error)
    }
    let wake = try WakeUpSignal()
    let ready = Mutex<Result<BrokerEndpoints, any Error>?>(nil)
    let bound = DispatchSemaphore(value: 0)
    let box = UncheckedStore(store)
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
        defer {
          router.close()
          publisher.close()
          zap?.close()
        }
        let endpoints = BrokerEndpoints(
          router: try router.lastEndpoint, publisher: try publisher.lastEndpoint
        )
        counters.withLock { $0.keys = box.store.entries.count }
        ready.withLock { $0 = .success(endpoints) }
        bound.signal()
        serve(
          router: router, publisher: publisher, zap: zap, wake: wake, store: box.store,
          endpoints: endpoints
        )
      } catch {
        ready.withLock { $0 = .failure(error) }
        bound.signal()
      }
    }
    bound.wait()
    let endpoints = try ready.withLock { $0! }.get()
    phase.withLock { $0 = .running(thread, wake, endpoints) }
    logger.info(
      "Broker listening",
      metadata: [
        "router": "\(endpoints.router)", "publisher": "\(endpoints.publisher)",
        "data": "\(configuration.dataDirectory?.path ?? "memory only")",
        "keys": "\(store.entries.count)",
      ]
    )
    return endpoints
  }

  /// Stops serving and waits for the thread to close its sockets. Safe to call more than once.
  public func stop() {
    let thread: IOThread? = phase.withLock { phase in
      guard case let .running(thread, wake, _) = phase else { return nil }
      stopRequested.store(true, ordering: .sequentiallyConsistent)
      wake.signal()
      phase = .stopped
      return thread
    }
    thread?.joinBlocking()
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
      if case let .running(thread, _, _) = phase { return thread }
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
    let publisher = try Socket(context: context, type: .pub)
    try secure(publisher)
    // Per subscriber, and before bind: libzmq copies it into each connection's pipe.
    try publisher.set(.sendHighWaterMark, Int32(clamping: configuration.maxQueuedUpdates))
    do {
      try publisher.bind(configuration.publishEndpoint)
    } catch {
      throw BrokerStartError.bind(
        configuration.publish == nil ? .derivedPublish : .publish, configuration.publishEndpoint, error
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
  private func authenticate(_ zap: Socket) {
    while let request = try? zap.receive(dontWait: true) {
      guard request.count >= 6 else { continue }
      answer(request, on: zap)
    }
  }

  private func answer(_ request: [Data], on zap: Socket) {
    let mechanism = String(decoding: request[5], as: UTF8.self)
    let key = request.count >= 7 ? CurveKeyPair.encode(Array(request[6])) : ""
    let allowed = mechanism == "CURVE" && configuration.curve?.allowedClientKeys.contains(key) == true
    if !allowed {
      counters.withLock { $0.deniedClients += 1 }
      logger.warning(
        "Denied a client", metadata: ["mechanism": "\(mechanism)", "key": "\(key.isEmpty ? "none" : key)"]
      )
    }
    _ = try? zap.send([
      request[0], request[1], Data((allowed ? "200" : "400").utf8),
      Data((allowed ? "OK" : "client key not allowed").utf8), Data((allowed ? key : "").utf8), Data(),
    ])
  }

  private func serve(
    router: Socket, publisher: Socket, zap: Socket?, wake: WakeUpSignal, store: BrokerStore,
    endpoints: BrokerEndpoints
  ) {
    var sessions = ClientSessions(timeout: configuration.clientTimeout)
    sessions.adopt(store.clients, at: elapsed())
    counters.withLock { $0.clients = sessions.count }
    // Every socket is polled by its ZMQ_FD, as the clients do: one `ppoll` per wake-up, where
    // `zmq_poll` makes a non-blocking pass first and asks each socket for its events before and
    // after it waits. The descriptor only signals commands nobody took in yet, so a socket used
    // since its last empty receive (a batch cut short, a reply sent) is asked before sleeping.
    var poller = Poller()
    let wakeIndex = poller.add(fileDescriptor: wake.fileDescriptor)
    let routerIndex: Int
    let publisherIndex: Int
    let zapIndex: Int?
    do {
      routerIndex = poller.add(fileDescriptor: try router.get(.fileDescriptor))
      // A new subscriber and its subscriptions reach the PUB socket as commands, which libzmq
      // takes in only when the socket is used, and then at most about once a millisecond. Asking
      // for its events when its descriptor signals takes them in at once, so a joining client's
      // SYNC finds its subscription in effect sooner.
      publisherIndex = poller.add(fileDescriptor: try publisher.get(.fileDescriptor))
      zapIndex = try zap.map { poller.add(fileDescriptor: try $0.get(.fileDescriptor)) }
    } catch {
      logger.error("Broker sockets unusable", metadata: ["error": "\(error)"])
      return
    }
    // The ZAP socket is only ever drained to empty, so its descriptor stays armed after this.
    if let zap { authenticate(zap) }
    var routerTouched = true
    while !stopRequested.load(ordering: .sequentiallyConsistent) {
      do {
        let routerWaiting = routerTouched && router.hasInput
        let ready = try poller.poll(timeout: routerWaiting ? .zero : .seconds(1))
        if ready.contains(wakeIndex) { wake.clear() }
        if ready.contains(publisherIndex) { _ = try? publisher.get(.events) }
        if let zap, let zapIndex, ready.contains(zapIndex) { authenticate(zap) }
        forgetSilentClients(&sessions, store: store)
        guard ready.contains(routerIndex) || routerWaiting else { continue }
        // Drain what is queued, a bounded batch at a time so a stop request is seen promptly.
        routerTouched = true
        for _ in 0..<1_000 {
          guard let frames = try router.receive(dontWait: true) else {
            routerTouched = false
            break
          }
          handle(
            frames, router: router, publisher: publisher, store: store, sessions: &sessions,
            endpoints: endpoints
          )
        }
      } catch let error as ZMQError where error.isContextTerminated {
        return
      } catch {
        logger.error("Broker socket error", metadata: ["error": "\(error)"])
      }
    }
  }

  /// Drops what the broker keeps for clients that went silent for longer than the timeout.
  private func forgetSilentClients(_ sessions: inout ClientSessions, store: BrokerStore) {
    let expired = sessions.expire(at: elapsed())
    guard !expired.isEmpty else { return }
    store.forget(expired)
    counters.withLock {
      $0.forgottenClients += expired.count
      $0.clients = sessions.count
    }
    logger.info("Forgot silent clients", metadata: ["count": "\(expired.count)"])
  }

  private func handle(
    _ frames: [Data], router: Socket, publisher: Socket, store: BrokerStore,
    sessions: inout ClientSessions, endpoints: BrokerEndpoints
  ) {
    counters.withLock { $0.requests += 1 }
    guard frames.count >= 2 else { return }
    let identity = frames[0]
    func reply(_ message: BrokerMessage) {
      _ = try? router.send([identity] + message.frames, dontWait: true)
    }
    let request: BrokerMessage
    do {
      request = try BrokerMessage(frames: Array(frames.dropFirst()))
    } catch {
      let rejected = counters.withLock { counters in
        switch error {
        case .malformed, .version: counters.malformed += 1
        case .unknownCommand: counters.unknownCommands += 1
        case .invalidKey: counters.invalidKeys += 1
        }
        return counters.rejectedInput
      }
      // Log the first few, then every power of two, so a flood cannot flood the log too.
      if rejected <= 8 || rejected & (rejected - 1) == 0 {
        logger.warning(
          "Rejected request", metadata: ["reason": "\(error)", "rejected so far": "\(rejected)"]
        )
      }
      let written = BrokerMessage.writeFields(of: Array(frames.dropFirst()))
      reply(.error(code: error.code, message: error.description, key: written?.key, write: written?.write))
      return
    }
    let now = elapsed()
    switch request {
    case let .hello(client):
      let known = sessions.count
      sessions.heard(from: client, peer: identity, at: now)
      if sessions.count != known { counters.withLock { $0.clients = sessions.count } }
      reply(
        .welcome(
          instance: instance, publisher: endpoints.publisher,
          maxValueSize: UInt64(configuration.maxValueSize)
        )
      )
      return
    case let .ping(versions):
      sessions.heard(fromPeer: identity, at: now)
      let behind = versions.compactMap { held -> KeyVersion? in
        let version = store.entries[held.key]?.version ?? 0
        return version == held.version ? nil : KeyVersion(key: held.key, version: version)
      }
      reply(.pong(instance: instance, behind: behind))
      return
    default:
      break
    }
    if let client = request.client {
      func refuse(_ code: BrokerErrorCode, _ message: String) {
        let written: (key: String, write: UInt64)? =
          if case let .write(_, write, key, _, _, _) = request { (key, write) } else { nil }
        reply(.error(code: code, message: message, key: written?.key, write: written?.write))
      }
      guard let hello = sessions.heard(fromPeer: identity, at: now) else {
        counters.withLock { $0.withoutHello += 1 }
        refuse(
          .helloFirst,
          "say HELLO first: this connection has not said HELLO to this broker, "
            + "or its client id said HELLO on another connection since"
        )
        return
      }
      guard hello == client else {
        counters.withLock { $0.malformed += 1 }
        refuse(.badRequest, "client \"\(client)\" is not the one this connection said HELLO as")
        return
      }
    }
    switch request {
    case let .sync(client, key):
      _ = try? publisher.send(BrokerMessage.synced(key: key, client: client).frames, dontWait: true)
    case let .get(client, key):
      // During the seed window, "no value" may only mean that no copy has arrived yet.
      if now < configuration.seedWindow, store.lacks(key) {
        reply(
          .error(code: .seeding, message: "no copy of this key has arrived yet; ask again", key: key, write: 0)
        )
        return
      }
      let snapshot = store.snapshot(key: key, client: client)
      reply(
        .snapshot(
          key: key, version: snapshot.version, lastWrite: snapshot.lastWrite, value: snapshot.value
        )
      )
    case let .seed(client, key, origin, version, value, writes):
      seed(
        client: client, key: key, origin: .init(instance: origin, version: version), value: value,
        writes: writes, reply: reply, publisher: publisher, store: store
      )
    case let .write(client, write, key, base, value, after):
      guard value.count <= configuration.maxValueSize else {
        counters.withLock { $0.oversized += 1 }
        logger.warning("Rejected oversized value", metadata: ["key": "\(key)", "bytes": "\(value.count)"])
        reply(
          .error(
            code: .tooLarge, message: "value of \(value.count) bytes exceeds \(configuration.maxValueSize)",
            key: key, write: write
          )
        )
        return
      }
      if now < configuration.seedWindow, store.awaitsCopies(key) {
        reply(
          .error(
            code: .seeding,
            message: "collecting clients' copies of keys until \(configuration.seedWindow) after start",
            key: key, write: write
          )
        )
        return
      }
      do {
        switch try store.write(
          client: client, write: write, key: key, base: base, value: value, after: after
        ) {
        case let .applied(version):
          counters.withLock {
            $0.writesApplied += 1
            $0.keys = store.entries.count
          }
          // Publish first: propagation to every reader matters more than the writer's ACK.
          let update = BrokerMessage.update(
            key: key, version: version, client: client, write: write, value: value
          )
          _ = try? publisher.send(update.frames, dontWait: true)
          reply(.ack(key: key, write: write, version: version))
        case let .rejected(version, lastWrite, current):
          counters.withLock { $0.writesRejected += 1 }
          reply(.reject(key: key, write: write, version: version, lastWrite: lastWrite, value: current))
        }
      } catch {
        counters.withLock { $0.storageErrors += 1 }
        logger.error("Could not persist a write", metadata: ["key": "\(key)", "error": "\(error)"])
        reply(.error(code: .storage, message: "\(error)", key: key, write: write))
      }
    case .hello, .ping:
      break
    case .welcome, .pong, .snapshot, .ack, .reject, .error, .update, .synced:
      counters.withLock { $0.unknownCommands += 1 }
      reply(.error(code: .unknownCommand, message: "not a request", key: nil, write: nil))
    }
  }

  /// Answers a client's copy of a key with the key's state after deciding on it: adopted (and
  /// published) when the broker may still take copies of the key and this one is the newest,
  /// otherwise left as it is. A copy confirmed under this very instance is never newer.
  private func seed(
    client: String, key: String, origin: BrokerStore.SeedOrigin, value: Data, writes: [String: UInt64],
    reply: (BrokerMessage) -> Void, publisher: Socket, store: BrokerStore
  ) {
    // A copy over the value limit (a broker restarted with a smaller one) is not adopted; the
    // client takes the broker's state instead, as for any refused copy.
    let fits = value.count <= configuration.maxValueSize
    if !fits { counters.withLock { $0.oversized += 1 } }
    do {
      if fits, origin.instance != instance,
        let version = try store.seed(client: client, key: key, origin: origin, value: value, writes: writes)
      {
        counters.withLock {
          $0.seedsAdopted += 1
          $0.keys = store.entries.count
        }
        logger.info(
          "Adopted a client's copy",
          metadata: ["key": "\(key)", "origin": "\(origin.instance)", "version": "\(origin.version)"]
        )
        let update = BrokerMessage.update(key: key, version: version, client: client, write: 0, value: value)
        _ = try? publisher.send(update.frames, dontWait: true)
      }
    } catch {
      // Unanswered: the client offers its copy again after a heartbeat.
      counters.withLock { $0.storageErrors += 1 }
      logger.error("Could not persist a seed", metadata: ["key": "\(key)", "error": "\(error)"])
      return
    }
    let snapshot = store.snapshot(key: key, client: client)
    reply(.snapshot(key: key, version: snapshot.version, lastWrite: snapshot.lastWrite, value: snapshot.value))
  }
}

/// Hands the store, created on the caller's thread, to the broker thread that alone uses it.
private struct UncheckedStore: @unchecked Sendable {
  let store: BrokerStore
  init(_ store: BrokerStore) { self.store = store }
}
