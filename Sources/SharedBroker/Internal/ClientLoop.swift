import Foundation
internal import Logging
import Synchronization
internal import ZeroMQ

/// The body of a ``BrokerClient``'s I/O thread, which owns its sockets: it polls them, decodes
/// what they read and reports it to the ``ClientStorage`` as ``ClientEvent``s; the storage feeds
/// its ``ClientMachine`` and sends, subscribes and moves through this loop, its
/// ``ClientTransport``. Every decision about the protocol is in the machine; this type only does
/// the I/O.
///
/// Only this thread touches the sockets: a writer records its mutation in the storage and wakes
/// the thread, which encodes and sends it, so no socket call ever runs inside a writer's reducer.
final class ClientLoop: ClientTransport, @unchecked Sendable {
  /// The brokers to try, in turn, and the one the DEALER is connected to (read by other
  /// threads too).
  private let brokers: Mutex<BrokerList>
  /// The broker endpoint the DEALER is connected to.
  var endpoint: String { brokers.withLock(\.current) }
  /// Every broker the client knows, given ones first.
  var knownBrokers: [String] { brokers.withLock(\.all) }
  /// Whether the client knows brokers besides the current one.
  private var hasOtherBrokers: Bool { brokers.withLock(\.hasOthers) }
  private let configuration: BrokerClient.Configuration
  private let logger: Logger

  /// A call may have taken in the socket's pending commands without draining it (see `run`).
  private var dealerTouched = false
  private var subscriberTouched = false
  private var monitorTouched = false
  private var dealer: Socket!
  private var subscriber: Socket!
  private let storage: ClientStorage
  private let wakeUp: WakeUpSignal?
  /// The messages the SUB socket had waiting, kept to reuse its storage.
  private var published: [BrokerMessage] = []
  private var publisherEndpoint: String?
  /// The DEALER's handshakes, which tell a refused or mismatched key from a broker away.
  private var handshakes: HandshakeHistory

  init(
    endpoints: [String], storage: ClientStorage, wakeUp: WakeUpSignal?,
    configuration: BrokerClient.Configuration, logger: Logger
  ) {
    brokers = Mutex(BrokerList(given: endpoints))
    self.storage = storage
    self.wakeUp = wakeUp
    self.configuration = configuration
    self.logger = logger
    handshakes = HandshakeHistory(usesCurve: configuration.curve != nil)
  }

  func run() {
    guard let wakeUp else { return }
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
      // A cluster's brokers announce changes to their set on a topic of their own.
      try subscriber.set(.subscribe, Array(BrokerMessage.brokersTopic.utf8))
      for socket in [dealer!, subscriber!] { try secure(socket) }
      let monitor = try SocketMonitor(watching: dealer, context: context)
      defer { monitor.close() }
      do {
        try dealer.connect(endpoint)
      } catch where hasOtherBrokers {
        // The others may do: the machine moves on when this one never answers.
        logger.error(
          "Cannot connect to the broker",
          metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
      }
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
        let start = ContinuousClock.now
        let timeout =
          dealerWaiting || subscriberWaiting || monitorWaiting
          ? .zero : storage.deadline(now: start) - start
        let ready = try poller.poll(timeout: timeout)
        guard !storage.withConnection(\.closed) else { return }
        // Work from another thread (a mutation, a new key, a reload) is in the storage, taken
        // with the turn below; cleared first, so a wake-up for work after the turn stays set.
        if ready.contains(wakeIndex) { wakeUp.clear() }
        if ready.contains(monitorIndex) || monitorWaiting { drainEvents(monitor) }
        if ready.contains(dealerIndex) || dealerWaiting { drainReplies() }
        if ready.contains(subscriberIndex) || subscriberWaiting { drainPublished() }
        storage.handle(.turn, at: .now, via: self)
      }
    } catch let error as ZMQError where error.isContextTerminated {
      return
    } catch {
      logger.error("Broker client stopped", metadata: ["error": "\(error)"])
    }
  }

  private func secure(_ socket: Socket) throws {
    guard let curve = configuration.curve else { return }
    try socket.setCurveClient(
      serverPublicKey: curve.serverPublicKey, publicKey: curve.publicKey,
      secretKey: curve.secretKey)
  }

  // MARK: - Handshakes

  /// A failed handshake is otherwise invisible (libzmq retries quietly), so it is turned into
  /// the reason a wait for the broker fails.
  private func drainEvents(_ monitor: SocketMonitor) {
    defer { monitorTouched = false }
    while let event = try? monitor.receive() {
      // After a move, the old broker's connection closing is no news.
      if event.kind == .disconnected, hasOtherBrokers, event.endpoint != endpoint { continue }
      let known = handshakes.problem
      handshakes.record(event)
      switch event.kind {
      case .disconnected:
        // The broker went away, and the next connection may reach another run of it, whose
        // versions mean something else. Until its WELCOME says which run it is, nothing from
        // either socket is taken for the run this client knew (the SUB may reconnect first).
        // Another broker of the cluster can take over at once.
        storage.handle(.connectionLost(move: hasOtherBrokers), at: .now, via: self)
      case .handshakeSucceeded:
        storage.handshakeFailed(nil)
        storage.handle(.handshakeSucceeded, at: .now, via: self)
      default:
        break
      }
      if let problem = handshakes.problem, problem != known {
        storage.handshakeFailed(
          .init(reason: Self.reason(problem), isPermanent: problem.isPermanent))
      }
    }
  }

  private static func reason(_ problem: HandshakeHistory.Problem) -> String {
    switch problem {
    case .curveRequired:
      "\(problem): give this client the broker's public key and a key pair"
    case .closed(_, usesCurve: false):
      "\(problem): if it requires CURVE, give this client the broker's public key and a key "
        + "pair; if its log says \"At capacity\", raise its open-file limit or wait for clients "
        + "to leave"
    case .curveNotUsed: "\(problem): connect without CURVE keys"
    default: "\(problem)"
    }
  }

  // MARK: - Replies

  private func drainReplies() {
    // Cut short after a batch (so the rest of the loop runs): more may be waiting.
    dealerTouched = true
    for _ in 0..<1_000 {
      guard let frames = try? dealer.receive(dontWait: true) else {
        dealerTouched = false
        return
      }
      let reply: BrokerMessage
      do {
        reply = try BrokerMessage(frames: frames)
      } catch {
        logger.warning("Ignored a malformed reply", metadata: ["reason": "\(error)"])
        continue
      }
      // The subscription follows the publisher each WELCOME names; a WELCOME whose publisher
      // cannot be reached is not taken (the next heartbeat says HELLO again).
      if case .welcome(_, let publisher, _, _) = reply, !connectSubscriber(to: publisher) { continue }
      storage.handle(.reply(reply), at: .now, via: self)
    }
  }

  private func connectSubscriber(to announced: String) -> Bool {
    let endpoint = BrokerMessage.publisherEndpoint(announced: announced, router: self.endpoint)
    guard publisherEndpoint != endpoint else { return true }
    subscriberTouched = true
    if let old = publisherEndpoint { try? subscriber.disconnect(old) }
    do {
      try subscriber.connect(endpoint)
      publisherEndpoint = endpoint
      return true
    } catch {
      logger.error(
        "Cannot connect to the broker's publisher",
        metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
      return false
    }
  }

  // MARK: - Fail-over

  /// Connects the DEALER to the next broker of the list; the SUB follows its `WELCOME`.
  func moveToNextBroker() -> Bool {
    let old = endpoint
    guard brokers.withLock({ $0.moveToNext() }) else { return false }
    try? dealer.disconnect(old)
    do {
      try dealer.connect(endpoint)
    } catch {
      logger.error(
        "Cannot connect to the broker", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
    }
    if let old = publisherEndpoint {
      try? subscriber.disconnect(old)
      publisherEndpoint = nil
    }
    dealerTouched = true
    subscriberTouched = true
    logger.notice("Trying another broker", metadata: ["endpoint": "\(endpoint)"])
    return true
  }

  // MARK: - Published messages

  /// Reads what the SUB socket has waiting and hands it to the machine as one batch.
  private func drainPublished() {
    subscriberTouched = true
    for _ in 0..<10_000 {
      guard let frames = try? subscriber.receive(dontWait: true) else {
        subscriberTouched = false
        break
      }
      // Another client's topic that happens to share our prefix, or noise: not ours.
      guard let message = try? BrokerMessage(published: frames) else { continue }
      published.append(message)
    }
    guard !published.isEmpty else { return }
    storage.handle(.published(published), at: .now, via: self)
    published.removeAll(keepingCapacity: true)
  }

  // MARK: - Transport

  func send(_ message: BrokerMessage) -> Bool {
    dealerTouched = true
    do {
      return try dealer.send(message.frames, dontWait: true)
    } catch {
      logger.debug("Could not send to the broker", metadata: ["error": "\(error)"])
      return false
    }
  }

  func subscribe(to key: String) {
    try? subscriber.set(.subscribe, Array(key.utf8))
    subscriberTouched = true
  }

  func learn(brokers announced: [String]) {
    guard brokers.withLock({ $0.learn(announced) }) else { return }
    logger.info(
      "The cluster's brokers", metadata: ["brokers": "\(brokers.withLock(\.all).joined(separator: ","))"])
  }
}
