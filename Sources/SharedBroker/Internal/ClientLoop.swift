import Foundation
internal import Logging
internal import ZeroMQ

/// The body of a ``BrokerClient``'s I/O thread, which owns its sockets.
///
/// The one exception: a writer's thread that finds the I/O thread idle in `poll` sends its write
/// itself (``flushFromWriter()``), which saves a thread wake-up on every write's way out. Both
/// hold `turn` while they touch the sockets or the state below, and the I/O thread polls the
/// DEALER through its `ZMQ_FD` rather than as a socket, so it is never inside libzmq with it
/// while a writer is.
///
/// Per key it walks `probing → snapshotting → synced`: first it proves its subscription to the
/// key's topic is in effect (`SYNC`, answered on the PUB socket by `SYNCED`), then asks for a
/// snapshot, so no update can fall between the snapshot and the stream. Only synced keys send
/// writes: a window of pipelined compare-and-sets per key, each chained to the previous one.
///
/// The window works like TCP's congestion window. It starts at
/// ``BrokerClient/Configuration/maxWritesInFlight``, falls to 1 when the broker rejects a write
/// (another client wrote the key first, and the rest of the chain is doomed with it), and grows
/// by one with every applied write. A contended key thus sends one batched write per round
/// trip, where a long chain would be rejected again and again, and an uncontended one pipelines.
final class ClientLoop: @unchecked Sendable {
  private enum KeyPhase {
    case probing(next: ContinuousClock.Instant, backoff: Duration)
    case snapshotting(sent: ContinuousClock.Instant)
    case synced
  }

  /// The first retry of HELLO and SYNC. On loopback a new connection is usually up within a
  /// millisecond or two, and a joining client waits for two of them (DEALER, then SUB), so the
  /// retries start short and double up to the heartbeat interval.
  private static let firstRetry = Duration.microseconds(250)

  /// Set once, before the I/O thread starts.
  weak var client: BrokerClient?
  private let endpoint: String
  private let id: String
  private let configuration: BrokerClient.Configuration
  private let logger: Logger

  /// Held by whichever thread touches the sockets or the state below.
  private let turn = NSLock()
  private var socketsOpen = false
  /// A call may have taken in the socket's pending commands without draining it (see `run`).
  private var dealerTouched = false
  private var subscriberTouched = false
  private var monitorTouched = false
  private var dealer: Socket!
  private var subscriber: Socket!
  private var brokerInstance: String?
  /// The largest value the broker accepts, as its WELCOME said. A bigger one is not sent: past
  /// its transport limit the broker's libzmq would drop the connection without a reply, and the
  /// write would wait for an answer that never comes.
  private var maxValueSize: UInt64?
  private var publisherEndpoint: String?
  private var connected = false
  private var lastHeard = ContinuousClock.now
  private var lastPing = ContinuousClock.now - .seconds(3600)
  /// While not connected, HELLO is retried quickly at first, then at the heartbeat interval.
  private var helloBackoff = ClientLoop.firstRetry
  private var phases: [String: KeyPhase] = [:]
  /// The client's channels, copied as keys are added, so an update or a write does not have to
  /// take the client's lock to find its channel.
  private var channels: [String: any BrokerChannel] = [:]
  /// Per key, the ids of the writes awaiting an answer, oldest first.
  private var inFlight: [String: [UInt64]] = [:]
  private var retryAfter: [String: ContinuousClock.Instant] = [:]
  /// Per key, how many writes may be in flight (absent: the maximum).
  private var window: [String: Int] = [:]
  private var nextWriteID: UInt64 = 1
  /// Per key, the writes seen applied, for a copy offered to a broker that lost the key.
  private var writers: [String: RecentWriters] = [:]
  /// Keys the last PONG said the broker holds at another version, checked once the updates
  /// read meanwhile are applied.
  private var behind: [KeyVersion] = []
  /// Handshakes in a row that the broker cut short; a few in a row mean a wrong server key
  /// rather than a broker restarting mid-handshake.
  private var closedHandshakes = 0

  init(endpoint: String, id: String, configuration: BrokerClient.Configuration, logger: Logger) {
    self.endpoint = endpoint
    self.id = id
    self.configuration = configuration
    self.logger = logger
  }

  /// Sends the writes waiting to go out from the caller's thread, if the I/O thread is idle;
  /// returns `false` when it is busy (it flushes writes on every turn anyway).
  func flushFromWriter() -> Bool {
    guard turn.try() else { return false }
    defer { turn.unlock() }
    guard socketsOpen, let client else { return true }
    flushWrites(client)
    // A send processes libzmq's pending commands, which may clear the DEALER's ZMQ_FD while a
    // reply waits: the I/O thread would sleep through it, so it is woken to read it. (The I/O
    // thread cleared `dealerTouched` before it went to sleep; only a send sets it here.)
    if dealerTouched, dealer.hasInput { client.wakeUpSignal?.signal() }
    return true
  }

  func run() {
    turn.lock()
    defer { turn.unlock() }
    guard let wakeUp = client?.wakeUpSignal else { return }
    do {
      let context = try Context()
      defer { context.terminate() }
      dealer = try Socket(context: context, type: .dealer)
      subscriber = try Socket(context: context, type: .sub)
      defer {
        dealer.close()
        subscriber.close()
      }
      try dealer.set(.immediate, 1)
      try dealer.set(.reconnectInterval, 100)
      try dealer.set(.reconnectIntervalMax, 1_000)
      try dealer.set(.sendHighWaterMark, 100_000)
      try dealer.set(.receiveHighWaterMark, 100_000)
      try subscriber.set(.receiveHighWaterMark, configuration.subscriberHighWaterMark)
      try subscriber.set(.reconnectInterval, 100)
      try subscriber.set(.reconnectIntervalMax, 1_000)
      for socket in [dealer!, subscriber!] { try secure(socket) }
      let monitor = try SocketMonitor(watching: dealer, context: context)
      defer { monitor.close() }
      try dealer.connect(endpoint)
      socketsOpen = true
      defer { socketsOpen = false }
      // Every socket is polled by its ZMQ_FD (a plain descriptor, one `poll` per wake-up where
      // `zmq_poll` makes two and asks each socket for its events). The descriptor only says
      // "look", and only for commands nobody took in yet: after a call of ours that may have
      // taken some in (a send, a subscription, a drain cut short), the socket is asked itself
      // before sleeping. The monitor tells of handshakes and of lost connections.
      var poller = Poller()
      let dealerIndex = poller.add(fileDescriptor: try dealer.get(.fileDescriptor))
      let subscriberIndex = poller.add(fileDescriptor: try subscriber.get(.fileDescriptor))
      let wakeIndex = poller.add(fileDescriptor: wakeUp.fileDescriptor)
      let monitorIndex = poller.add(fileDescriptor: try monitor.socket.get(.fileDescriptor))
      (dealerTouched, subscriberTouched, monitorTouched) = (true, true, true)
      while true {
        let dealerWaiting = dealerTouched && dealer.hasInput
        let subscriberWaiting = subscriberTouched && subscriber.hasInput
        let monitorWaiting = monitorTouched && monitor.socket.hasInput
        (dealerTouched, subscriberTouched, monitorTouched) = (false, false, false)
        let timeout = dealerWaiting || subscriberWaiting || monitorWaiting ? .zero : nextDeadline() - .now
        let ready = try withoutTurn { try poller.poll(timeout: timeout) }
        guard let client, !client.isClosed else { return }
        // Every request from another thread (a new key, a resync) comes with a wake-up.
        if ready.contains(wakeIndex) {
          wakeUp.clear()
          takeRequests(from: client)
        }
        if ready.contains(monitorIndex) || monitorWaiting { drainEvents(monitor, client) }
        if ready.contains(dealerIndex) || dealerWaiting { drainReplies(client) }
        if ready.contains(subscriberIndex) || subscriberWaiting { drainPublished(client) }
        if !behind.isEmpty { checkBehind() }
        tick(client)
        flushWrites(client)
      }
    } catch let error as ZMQError where error.isContextTerminated {
      return
    } catch {
      logger.error("Broker client stopped", metadata: ["error": "\(error)"])
    }
  }

  /// Lets writers in while the I/O thread waits.
  private func withoutTurn<R>(_ body: () throws -> R) rethrows -> R {
    turn.unlock()
    defer { turn.lock() }
    return try body()
  }

  private func secure(_ socket: Socket) throws {
    guard let curve = configuration.curve else { return }
    try socket.set(.curveServerKey, try CurveKeyPair.decode(curve.serverPublicKey))
    try socket.set(.curvePublicKey, try CurveKeyPair.decode(curve.publicKey))
    try socket.set(.curveSecretKey, try CurveKeyPair.decode(curve.secretKey))
  }

  // MARK: - Handshakes

  /// A failed handshake is otherwise invisible (libzmq retries quietly), so it is turned into
  /// the reason a wait for the broker fails.
  private func drainEvents(_ monitor: SocketMonitor, _ client: BrokerClient) {
    defer { monitorTouched = false }
    while let event = try? monitor.receive() {
      switch event.kind {
      case .disconnected:
        // The broker went away, and the next connection may reach another run of it, whose
        // versions mean something else. Until its WELCOME says which run it is, nothing from
        // either socket is taken for the run this client knew (the SUB may reconnect first).
        brokerInstance = nil
      case .handshakeSucceeded:
        closedHandshakes = 0
        client.handshakeFailed(nil)
        // The DEALER drops what is sent before its connection is up (ZMQ_IMMEDIATE), so the
        // first HELLO was probably lost: say it now rather than at the next retry.
        if !connected {
          helloBackoff = Self.firstRetry
          send(.hello(client: id))
          lastPing = .now
        }
      case .handshakeFailedAuth:
        client.handshakeFailed(
          .init(
            reason: "the broker refused this client's CURVE key (status \(event.value)): "
              + "its public key is not on the broker's allow-list",
            isPermanent: true
          )
        )
      case .handshakeFailedProtocol where event.value == SocketMonitor.mechanismMismatch:
        client.handshakeFailed(
          .init(
            reason: configuration.curve == nil
              ? "the broker requires CURVE: give this client the broker's public key and a key pair"
              : "the broker does not use CURVE: connect without CURVE keys",
            isPermanent: true
          )
        )
      case .handshakeFailedProtocol:
        client.handshakeFailed(
          .init(reason: "the handshake broke the protocol (error \(event.value))", isPermanent: true)
        )
      case .handshakeFailedNoDetail where configuration.curve != nil:
        closedHandshakes += 1
        client.handshakeFailed(
          .init(
            reason: "the broker closed the connection during the CURVE handshake \(closedHandshakes) "
              + "times in a row, as it does when the server key this client uses is not the "
              + "broker's public key",
            isPermanent: closedHandshakes >= 3
          )
        )
      default:
        break
      }
    }
  }

  // MARK: - Timing

  private var interval: Duration { configuration.heartbeatInterval }

  private var pingInterval: Duration { connected ? interval : min(helloBackoff, interval) }

  private func nextDeadline() -> ContinuousClock.Instant {
    var deadline = lastPing + pingInterval
    for phase in phases.values {
      switch phase {
      case let .probing(next, _) where connected: deadline = min(deadline, next)
      case let .snapshotting(sent) where connected: deadline = min(deadline, sent + interval)
      default: break
      }
    }
    for retry in retryAfter.values { deadline = min(deadline, retry) }
    return max(deadline, .now)
  }

  private func tick(_ client: BrokerClient) {
    let now = ContinuousClock.now
    if connected, now - lastHeard > interval * configuration.missedHeartbeats {
      logger.warning("Broker stopped answering", metadata: ["endpoint": "\(endpoint)"])
      connected = false
      inFlight = [:]
      for key in phases.keys { phases[key] = .probing(next: now, backoff: Self.firstRetry) }
      helloBackoff = Self.firstRetry
      client.setState(.disconnected)
    }
    if now - lastPing >= pingInterval {
      send(connected ? .ping(versions: heldVersions()) : .hello(client: id))
      if !connected { helloBackoff = min(helloBackoff * 2, interval) }
      lastPing = now
    }
    guard connected else { return }
    for (key, phase) in phases {
      switch phase {
      case let .probing(next, backoff) where now >= next:
        send(.sync(client: id, key: key))
        let backoff = min(backoff * 2, interval)
        phases[key] = .probing(next: now + backoff, backoff: backoff)
      case let .snapshotting(sent) where now - sent >= interval:
        requestSnapshot(key)
      default:
        break
      }
    }
  }

  // MARK: - Requests from other threads

  private func takeRequests(from client: BrokerClient) {
    let (added, resync) = client.takeRequests()
    for key in added {
      // A key re-added with another value type has a new channel.
      channels[key] = client.channel(key)
      guard phases[key] == nil else { continue }
      try? subscriber.set(.subscribe, Array(key.utf8))
      subscriberTouched = true
      phases[key] = .probing(next: .now, backoff: Self.firstRetry)
    }
    for key in resync where connected {
      if case .synced = phases[key] { requestSnapshot(key) }
    }
    if !resync.isEmpty { updateState(client) }
    if !added.isEmpty { updateState(client) }
  }

  // MARK: - Replies

  private func drainReplies(_ client: BrokerClient) {
    // Cut short after a batch (so the rest of the loop runs): more may be waiting.
    dealerTouched = true
    for _ in 0..<1_000 {
      guard let frames = try? dealer.receive(dontWait: true) else {
        dealerTouched = false
        return
      }
      lastHeard = .now
      do {
        handle(try BrokerMessage(frames: frames), client)
      } catch {
        logger.warning("Ignored a malformed reply", metadata: ["reason": "\(error)"])
      }
    }
  }

  private func handle(_ reply: BrokerMessage, _ client: BrokerClient) {
    switch reply {
    case let .welcome(instance, publisher, maxValueSize):
      self.maxValueSize = maxValueSize
      connect(instance: instance, publisher: publisher, client)
    case let .pong(instance, behind):
      if instance != brokerInstance || !connected {
        // A restarted broker: start over with HELLO to learn its publisher.
        helloAgain()
      } else {
        self.behind = behind
      }
    case let .snapshot(key, version, lastWrite, value):
      // Only the answer to a GET that is still awaited: no write goes out while one is, so its
      // lastWrite accounts for every write in flight. A late answer to a GET sent twice (the
      // first answer was slow) may predate writes sent since; taking it would drop their
      // mutations from the in-flight set and apply them a second time after the broker has.
      guard let channel = channels[key], case .snapshotting = phases[key], let brokerInstance else { return }
      channel.receiveState(version: version, lastWrite: lastWrite, value: value, instance: brokerInstance)
      phases[key] = .synced
      inFlight[key] = nil
      updateState(client)
    case let .ack(key, write, version):
      guard settle(key, through: write) else { return }
      writers[key, default: RecentWriters()].record(id, write: write)
      channels[key]?.receiveAck(write: write, version: version)
      client.progressed()
    case let .reject(key, write, version, lastWrite, value):
      // The writes behind it are doomed (each is chained to it): their answers are ignored.
      guard inFlight[key]?.contains(write) == true, let brokerInstance else { return }
      inFlight[key] = nil
      window[key] = 1
      channels[key]?.receiveState(version: version, lastWrite: lastWrite, value: value, instance: brokerInstance)
      client.progressed()
    case .error(.helloFirst, _, _, _):
      // The connection is new to the broker (it restarted, or the connection was re-made): the
      // request was not handled. Handshake again; the keys resync and the writes go out again.
      helloAgain()
    case let .error(code, message, key, write):
      let waiting = code == .seeding
      if !waiting {
        logger.error("The broker refused a request", metadata: ["code": "\(code.rawValue)", "message": "\(message)"])
      }
      guard let key, let write, inFlight[key]?.contains(write) == true else { return }
      inFlight[key] = nil
      retryAfter[key] = .now + interval
      channels[key]?.writeFailed(waiting ? nil : BrokerWriteError(code: code, message: message))
      client.progressed()
    case .hello, .ping, .sync, .get, .seed, .write, .update, .synced:
      logger.warning("Ignored a request sent to a client")
    }
  }

  /// Starts the handshake over, as after a lost connection.
  private func helloAgain() {
    connected = false
    inFlight = [:]
    helloBackoff = Self.firstRetry
    send(.hello(client: id))
    lastPing = .now
  }

  private func connect(instance: String, publisher: String, _ client: BrokerClient) {
    let endpoint = Self.publisherEndpoint(announced: publisher, router: self.endpoint)
    if publisherEndpoint != endpoint {
      subscriberTouched = true
      if let old = publisherEndpoint { try? subscriber.disconnect(old) }
      do {
        try subscriber.connect(endpoint)
        publisherEndpoint = endpoint
      } catch {
        logger.error("Cannot connect to the broker's publisher", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
        return
      }
    }
    if connected, instance == brokerInstance { return }
    brokerInstance = instance
    connected = true
    inFlight = [:]
    for key in phases.keys { phases[key] = .probing(next: .now, backoff: Self.firstRetry) }
    updateState(client)
  }

  /// The broker announces where its PUB socket is bound (`tcp://0.0.0.0:5556`); reach it on the
  /// host this client used for the ROUTER.
  static func publisherEndpoint(announced: String, router: String) -> String {
    guard announced.hasPrefix("tcp://"), router.hasPrefix("tcp://"),
      let port = announced.split(separator: ":").last,
      let colon = router.lastIndex(of: ":")
    else { return announced }
    return "\(router[..<colon]):\(port)"
  }

  // MARK: - Published messages

  private func drainPublished(_ client: BrokerClient) {
    // The keys updated in this batch: each decodes and notifies once, after it.
    var updated: [String: any BrokerChannel] = [:]
    defer {
      for channel in updated.values { channel.deliverUpdates() }
      if !updated.isEmpty { client.progressed() }
    }
    subscriberTouched = true
    for _ in 0..<10_000 {
      guard let frames = try? subscriber.receive(dontWait: true) else {
        subscriberTouched = false
        return
      }
      do {
        switch try BrokerMessage(published: frames) {
        case let .update(key, version, writer, write, value):
          guard let channel = channels[key], let brokerInstance else { continue }
          let fromThisClient = writer == id
          if fromThisClient { settle(key, through: write) }
          if write > 0 { writers[key, default: RecentWriters()].record(writer, write: write) }
          let gap = channel.receiveUpdate(
            version: version, fromThisClient: fromThisClient, write: write, value: value,
            instance: brokerInstance
          )
          if gap, case .synced = phases[key] {
            logger.debug("Missed updates, resyncing", metadata: ["key": "\(key)"])
            requestSnapshot(key)
          }
          updated[key] = channel
        case let .synced(key, requester):
          guard requester == id, case .probing = phases[key] else { continue }
          requestSnapshot(key)
        default:
          continue
        }
      } catch {
        // Another client's topic that happens to share our prefix, or noise: not ours.
        continue
      }
    }
  }

  // MARK: - Sending

  /// Asks for the key's state: with `GET`, or, to a broker instance other than the one that
  /// confirmed this client's copy (which may have lost the key), by offering that copy (`SEED`).
  /// Either is answered with a `SNAPSHOT`.
  private func requestSnapshot(_ key: String) {
    if let brokerInstance, let copy = channels[key]?.seedCopy(for: brokerInstance) {
      send(
        .seed(
          client: id, key: key, origin: copy.origin, version: copy.version, value: copy.value,
          writes: writers[key]?.writes ?? [:]
        )
      )
    } else {
      send(.get(client: id, key: key))
    }
    phases[key] = .snapshotting(sent: .now)
  }

  /// The versions of the keys in sync, for the broker to say which ones it holds newer: the
  /// last updates before a quiet spell may have been dropped, and no later one reveals the gap.
  private func heldVersions() -> [KeyVersion] {
    phases.compactMap { key, phase in
      guard case .synced = phase, let channel = channels[key] else { return nil }
      return KeyVersion(key: key, version: channel.confirmedVersion)
    }
  }

  /// Resyncs the idle keys that the broker holds at a newer version than this client does.
  private func checkBehind() {
    defer { behind = [] }
    for held in behind {
      guard case .synced = phases[held.key], inFlight[held.key, default: []].isEmpty,
        let channel = channels[held.key], channel.confirmedVersion < held.version
      else { continue }
      logger.debug("Missed the last updates, resyncing", metadata: ["key": "\(held.key)"])
      requestSnapshot(held.key)
    }
  }

  private func flushWrites(_ client: BrokerClient) {
    guard connected else { return }
    let now = ContinuousClock.now
    for channel in channels.values where channel.hasUnconfirmedWrites {
      let key = channel.key
      guard case .synced = phases[key],
        inFlight[key, default: []].count < window[key, default: configuration.maxWritesInFlight]
      else { continue }
      if let retry = retryAfter[key] {
        guard now >= retry else { continue }
        retryAfter[key] = nil
      }
      let writeID = nextWriteID
      guard let write = channel.nextWrite(id: writeID) else { continue }
      nextWriteID += 1
      if let maxValueSize, write.value.count > maxValueSize {
        // What the broker would answer, without the round trip; retried like its answer.
        retryAfter[key] = now + interval
        channel.writeFailed(
          BrokerWriteError(
            code: .tooLarge,
            message: "value of \(write.value.count) bytes exceeds the broker's limit of \(maxValueSize)"
          )
        )
        client.progressed()
        continue
      }
      inFlight[key, default: []].append(writeID)
      send(
        .write(client: id, write: writeID, key: key, base: write.base, value: write.value, after: write.after)
      )
    }
  }

  /// Forgets the in-flight writes up to `write`, which the broker applied (answers come in
  /// order), and widens the key's window. Returns whether `write` was in flight.
  @discardableResult
  private func settle(_ key: String, through write: UInt64) -> Bool {
    guard let index = inFlight[key]?.firstIndex(of: write) else { return false }
    inFlight[key]?.removePrefix(index + 1)
    if let narrowed = window[key] {
      window[key] = narrowed + 1 >= configuration.maxWritesInFlight ? nil : narrowed + 1
    }
    return true
  }

  private func send(_ message: BrokerMessage) {
    dealerTouched = true
    do {
      try dealer.send(message.frames, dontWait: true)
    } catch {
      logger.debug("Could not send to the broker", metadata: ["error": "\(error)"])
    }
  }

  private func updateState(_ client: BrokerClient) {
    guard connected else { return }
    let synced = phases.values.allSatisfy { if case .synced = $0 { true } else { false } }
    client.setState(synced ? .connected : .syncing)
    client.progressed()
  }
}

/// The broker refused to apply a write; the mutations stay pending and are retried.
public struct BrokerWriteError: Error, CustomStringConvertible {
  /// The broker's error code.
  public let code: BrokerErrorCode
  /// The broker's explanation.
  public let message: String

  /// A readable explanation.
  public var description: String { "The broker refused the write (\(code.rawValue)): \(message)" }
}
