import Dispatch
import Foundation
import Logging
import SharedBroker
import SharedBrokerProtocol
import ZeroMQ

/// One tab's way to the broker: a DEALER and a SUB of its own, so that the broker sees the tab as
/// the client it is (its own `HELLO`, its own connection) and the front adds no state of its own
/// to the protocol. Unchecked `Sendable`: its mutable state is used only on its queue. Requests the tab sends reach the DEALER in order; replies and published
/// messages come out of ``outbound`` in the order the sockets gave them.
///
/// The relay has no thread: a tab's request is sent on the caller's thread, and what the sockets
/// receive is read when their descriptors say so (dispatch sources). One serial queue orders
/// every use of the sockets, which ZeroMQ requires; a send runs on it synchronously, so a tap
/// reaches the DEALER without waking another thread.
///
/// Of several brokers (a cluster), the relay uses one at a time and moves the tab to the next
/// when its connection to the broker drops, as the Swift client does, or when a `HELLO` finds no
/// broker there (no `WELCOME` within ``helloPatience``, or `unavailable`). It learns the
/// cluster's brokers from `WELCOME` and `BROKERS` and keeps them in the Swift client's
/// ``BrokerList``. After a move on a dropped connection the relay tells the tab `ERROR hello`,
/// the protocol's word for a connection that has not said `HELLO`.
final class TabRelay: @unchecked Sendable {
  /// What the relay hands the tab.
  enum Outbound: Sendable, Equatable {
    /// A reply from the broker's ROUTER.
    case reply([Data])
    /// A message from the broker's PUB socket (topic first).
    case published([Data])
  }

  /// What the broker sent the tab, in order.
  let outbound: AsyncStream<Outbound>
  private let continuation: AsyncStream<Outbound>.Continuation
  private let logger: Logger
  /// Every use of the sockets and of the state below runs on this queue.
  private let queue = DispatchQueue(label: "web-tab")
  private let dealer: Socket
  private let subscriber: Socket
  /// Tells when the DEALER's connection drops (a broker killed or stopped).
  private let monitor: SocketMonitor
  /// Read sources on the sockets' descriptors; they end before the sockets close.
  private var sources: [any DispatchSourceRead] = []
  private let sourcesCancelled = DispatchGroup()
  private var closed = false
  private var brokers: BrokerList
  private var subscribed: Set<String> = []
  private var publisher: String?
  /// When the `HELLO` now waiting for its `WELCOME` went out.
  private var helloSent: ContinuousClock.Instant?
  /// Whether the front said that no broker answers this tab (once until one does).
  private var saidUnanswered = false

  /// How long a `HELLO` may go unanswered before the tab moves to the next broker.
  static let helloPatience = Duration.milliseconds(1_500)

  /// Connects to the first of `brokers` (CURVE with `credentials`) and starts reading.
  init(
    context: Context, brokers given: [String], credentials: BrokerClient.CurveCredentials?,
    logger: Logger
  ) throws {
    precondition(!given.isEmpty, "a relay needs a broker")
    (outbound, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    self.logger = logger
    brokers = BrokerList(given: given)
    dealer = try Self.socket(context, .dealer, credentials)
    subscriber = try Self.socket(context, .sub, credentials)
    monitor = try SocketMonitor(watching: dealer, context: context)
    try dealer.connect(given[0])
    try subscriber.set(.subscribe, Array(BrokerMessage.brokersTopic.utf8))
    let descriptors = try [dealer, subscriber, monitor.socket].map { try $0.get(.fileDescriptor) }
    queue.sync {
      for descriptor in descriptors {
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { [weak self] in self?.drain() }
        sourcesCancelled.enter()
        source.setCancelHandler { [sourcesCancelled] in sourcesCancelled.leave() }
        source.resume()
        sources.append(source)
      }
    }
  }

  /// Sends a request to the broker, on the caller's thread.
  func send(_ request: BrokerMessage) {
    queue.sync {
      guard !closed else { return }
      do {
        try forward(request)
      } catch {
        logger.error("A tab's broker sockets failed", metadata: ["error": "\(error)"])
      }
      // A send may have taken in what the descriptors would have told of.
      drain()
    }
  }

  /// Stops reading and closes the sockets; ``outbound`` finishes.
  func close() {
    let cancelled = queue.sync { () -> Bool in
      guard !closed else { return false }
      closed = true
      for source in sources { source.cancel() }
      return true
    }
    guard cancelled else { return }
    // A descriptor must leave the sources before its socket closes it.
    sourcesCancelled.wait()
    queue.sync {
      monitor.close()
      dealer.close()
      subscriber.close()
      continuation.finish()
    }
  }

  private static func socket(
    _ context: Context, _ type: SocketType, _ credentials: BrokerClient.CurveCredentials?
  ) throws -> Socket {
    let socket = try Socket(context: context, type: type)
    try socket.set(.linger, 0)
    if let credentials {
      try socket.setCurveClient(
        serverPublicKey: credentials.serverPublicKey, publicKey: credentials.publicKey,
        secretKey: credentials.secretKey)
    }
    return socket
  }

  private func forward(_ request: BrokerMessage) throws {
    if case .hello = request {
      // The last HELLO found no broker: this one goes to the next, which gets as long.
      if let sent = helloSent, ContinuousClock.now - sent >= Self.helloPatience {
        try move("its HELLO found no broker")
        helloSent = .now
      }
      if helloSent == nil { helloSent = .now }
    }
    // A key's updates must flow before the broker answers its SYNC.
    if let key = Self.key(of: request), subscribed.insert(key).inserted {
      try subscriber.set(.subscribe, Array(BrokerMessage.topic(of: key)))
    }
    _ = try dealer.send(request.frames, dontWait: true)
  }

  /// Reads everything the sockets hold. A descriptor only says that something changed, and
  /// stays readable until the socket takes its commands in: asking for the socket's events does
  /// that at once, where a receive may put it off for a while.
  private func drain() {
    guard !closed else { return }
    do {
      while monitor.socket.hasInput, let event = try monitor.receive() {
        // Only the current broker's drop counts: after a move, the old one's is no news.
        if event.kind == .disconnected, event.endpoint == brokers.current, brokers.hasOthers {
          try move("its connection dropped")
          helloSent = nil
          // The cluster's brokers share an instance, so nothing the next one answers would
          // tell the tab it moved: the protocol's own word for a new connection does.
          continuation.yield(.reply(Self.moved))
        }
      }
      while dealer.hasInput, let frames = try dealer.receive(dontWait: true) { try reply(frames) }
      while subscriber.hasInput, let frames = try subscriber.receive(dontWait: true) {
        if frames.first == Self.brokersTopic,
          case .brokers(let cluster)? = try? BrokerMessage(published: frames)
        {
          _ = brokers.learn(cluster)
          continue
        }
        continuation.yield(.published(frames))
      }
    } catch {
      logger.error("A tab's broker sockets failed", metadata: ["error": "\(error)"])
    }
  }

  private func reply(_ frames: [Data]) throws {
    // Only a WELCOME or an ERROR tells the relay anything: the rest pass undecoded.
    let telling = frames.first == Self.welcome || frames.first == Self.error
    switch telling ? try? BrokerMessage(frames: frames) : nil {
    case .welcome(_, let announced, _, let cluster, _)?:
      helloSent = nil
      saidUnanswered = false
      _ = brokers.learn(cluster)
      let endpoint = BrokerMessage.publisherEndpoint(announced: announced, router: brokers.current)
      if endpoint != publisher {
        if let publisher { try? subscriber.disconnect(publisher) }
        try subscriber.connect(endpoint)
        publisher = endpoint
      }
    case .error(.unavailable, _, _, _)?:
      // This broker is cut from its cluster: the tab's next HELLO goes elsewhere.
      helloSent = .now - Self.helloPatience
    default:
      break
    }
    continuation.yield(.reply(frames))
  }

  private func move(_ reason: String) throws {
    let left = brokers.current
    guard brokers.moveToNext() else {
      if !saidUnanswered {
        logger.warning("No broker answers a tab's HELLO", metadata: ["broker": "\(left)"])
        saidUnanswered = true
      }
      return
    }
    try? dealer.disconnect(left)
    try dealer.connect(brokers.current)
    if let old = publisher {
      try? subscriber.disconnect(old)
      publisher = nil
    }
    logger.info(
      "A tab moves to another broker",
      metadata: ["broker": "\(brokers.current)", "reason": "\(reason)"])
  }

  /// What a tab hears when the front moved it: say `HELLO` to the new broker and sync again.
  private static let moved = BrokerMessage.error(
    code: .helloFirst, message: "the front moved this tab to another broker of the cluster",
    key: nil, write: nil
  ).frames
  private static let welcome = Data("WELCOME".utf8)
  private static let error = Data("ERROR".utf8)
  private static let brokersTopic = Data(BrokerMessage.brokersTopic.utf8)

  /// The key a request names, for the requests that name one.
  private static func key(of request: BrokerMessage) -> String? {
    switch request {
    case .sync(_, let key), .get(_, let key), .write(_, _, let key, _, _, _, _),
      .seed(_, let key, _, _, _, _):
      key
    default: nil
    }
  }
}
