import Foundation
internal import Logging
internal import ZeroMQ

/// The body of a ``BrokerClient``'s I/O thread, which owns its sockets and its
/// ``ClientDriver`` (and so the ``ClientMachine``): it polls the sockets, decodes what they read
/// and reports it to the driver as ``ClientEvent``s; the driver feeds the machine and sends,
/// subscribes and moves through this loop, its ``ClientTransport``. Every decision about the
/// protocol is in the machine; this type only does the I/O.
///
/// Only this thread touches the sockets: a writer posts its mutation to the storage's mailbox
/// and wakes the thread, which encodes and sends it, so no socket call ever runs inside a
/// writer's reducer.
final class ClientLoop: ClientTransport, @unchecked Sendable {
  private let configuration: BrokerClient.Configuration
  private let logger: Logger

  // The variables below are the I/O thread's alone, and none is reached through another while
  // it is being changed: they go without the run-time exclusivity check (some 80 instructions
  // per access, several accesses per message).

  /// A call may have taken in the socket's pending commands without draining it (see `run`).
  @exclusivity(unchecked) private var dealerTouched = false
  @exclusivity(unchecked) private var subscriberTouched = false
  @exclusivity(unchecked) private var monitorTouched = false
  @exclusivity(unchecked) private var dealer: Socket!
  @exclusivity(unchecked) private var subscriber: Socket!
  private let driver: ClientDriver
  private let storage: ClientStorage
  private let wakeUp: WakeUpSignal?
  /// The messages the SUB socket had waiting, kept to reuse its storage.
  @exclusivity(unchecked) private var published: [BrokerMessage] = []
  /// The message received last, and the frames of the one sent last, kept to reuse their
  /// storage.
  @exclusivity(unchecked) private var received = FrameBuffer()
  @exclusivity(unchecked) private var outgoing = FrameBuffer()

  init(
    driver: ClientDriver, wakeUp: WakeUpSignal?, configuration: BrokerClient.Configuration,
    logger: Logger
  ) {
    self.driver = driver
    storage = driver.storage
    self.wakeUp = wakeUp
    self.configuration = configuration
    self.logger = logger
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
      let brokers = driver.machine.brokers
      do {
        try dealer.connect(brokers.current)
      } catch where brokers.hasOthers {
        // The others may do: the machine moves on when this one never answers.
        logger.error(
          "Cannot connect to the broker",
          metadata: ["endpoint": "\(brokers.current)", "error": "\(error)"])
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
        let start = Moment.now
        let timeout =
          dealerWaiting || subscriberWaiting || monitorWaiting
          ? .zero : driver.deadline(now: start) - start
        let ready = try poller.poll(timeout: timeout)
        guard !storage.withConnection(\.closed) else { return }
        // Work from another thread (a mutation, a new key, a reload) is in the mailbox, taken
        // with the turn below; cleared first, so a wake-up for work after the turn stays set.
        if ready.contains(wakeIndex) { wakeUp.clear() }
        if ready.contains(monitorIndex) || monitorWaiting { drainEvents(monitor) }
        if ready.contains(dealerIndex) || dealerWaiting { drainReplies() }
        if ready.contains(subscriberIndex) || subscriberWaiting { drainPublished() }
        driver.handle(.turn, at: Moment.now, via: self)
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

  // MARK: - Connections' events

  private func drainEvents(_ monitor: SocketMonitor) {
    defer { monitorTouched = false }
    while let event = try? monitor.receive() {
      driver.handle(.dealer(event), at: Moment.now, via: self)
    }
  }

  // MARK: - Replies

  private func drainReplies() {
    // Cut short after a batch (so the rest of the loop runs): more may be waiting.
    dealerTouched = true
    withReceiveBuffer { received in
      for _ in 0..<1_000 {
        guard Self.receive(from: dealer, into: &received) else {
          dealerTouched = false
          return
        }
        let reply: BrokerMessage
        do {
          reply = try BrokerMessage(frames: received)
        } catch {
          logger.warning("Ignored a malformed reply", metadata: ["reason": "\(error)"])
          continue
        }
        driver.handle(.reply(reply), at: Moment.now, via: self)
      }
    }
  }

  // MARK: - Connections

  func connectDealer(to endpoint: String, from old: String) {
    try? dealer.disconnect(old)
    do {
      try dealer.connect(endpoint)
    } catch {
      logger.error(
        "Cannot connect to the broker", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
    }
    dealerTouched = true
    logger.notice("Trying another broker", metadata: ["endpoint": "\(endpoint)"])
  }

  func connectSubscriber(to endpoint: String, from old: String?) -> Bool {
    subscriberTouched = true
    if let old { try? subscriber.disconnect(old) }
    do {
      try subscriber.connect(endpoint)
      return true
    } catch {
      logger.error(
        "Cannot connect to the broker's publisher",
        metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
      return false
    }
  }

  func disconnectSubscriber(from endpoint: String) {
    try? subscriber.disconnect(endpoint)
    subscriberTouched = true
  }

  // MARK: - Published messages

  /// Reads what the SUB socket has waiting and hands it to the machine as one batch.
  private func drainPublished() {
    subscriberTouched = true
    withReceiveBuffer { received in
      for _ in 0..<10_000 {
        guard Self.receive(from: subscriber, into: &received) else {
          subscriberTouched = false
          break
        }
        guard !driver.isSettledOwnUpdate(received) else { continue }
        // Noise: not a message of the protocol.
        guard let message = try? BrokerMessage(published: received) else { continue }
        published.append(message)
      }
    }
    guard !published.isEmpty else { return }
    driver.handle(.published(published), at: Moment.now, via: self)
    published.removeAll(keepingCapacity: true)
  }

  /// Runs `body` with the receive buffer taken out of the loop for the call: written as a
  /// stored property, frame by frame, it was checked for exclusive access on every frame.
  private func withReceiveBuffer(_ body: (inout FrameBuffer) -> Void) {
    var buffer = FrameBuffer()
    swap(&buffer, &received)
    defer { swap(&buffer, &received) }
    body(&buffer)
  }

  /// Receives what `socket` has waiting into `buffer`; `false` when nothing was.
  private static func receive(from socket: Socket, into buffer: inout FrameBuffer) -> Bool {
    buffer.removeAll()
    return (try? socket.receive(dontWait: true) { buffer.append($0) }) == true
  }

  // MARK: - Transport

  func send(_ message: BrokerMessage) -> Bool {
    dealerTouched = true
    outgoing.removeAll()
    message.encode(into: &outgoing)
    do {
      return try outgoing.send { try dealer.send($0, more: $1, dontWait: true) }
    } catch {
      logger.debug("Could not send to the broker", metadata: ["error": "\(error)"])
      return false
    }
  }

  func subscribe(to key: String) {
    try? subscriber.set(.subscribe, Array(BrokerMessage.topic(of: key)))
    subscriberTouched = true
  }
}
