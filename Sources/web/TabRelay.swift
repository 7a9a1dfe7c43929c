import Foundation
import Logging
import SharedBroker
import SharedBrokerProtocol
import Synchronization
import ZeroMQ

/// One tab's way to the broker: a DEALER and a SUB of its own, driven by a thread of its own, so
/// that the broker sees the tab as the client it is (its own `HELLO`, its own connection) and
/// the front adds no state of its own to the protocol. Requests the tab sends reach the DEALER
/// in order; replies and published messages come out of ``outbound`` in the order the sockets
/// gave them.
///
/// Of several brokers (a cluster), the relay uses one at a time and moves the tab to the next
/// when its connection to the broker drops, as the Swift client does, or when a `HELLO` finds no
/// broker there (no `WELCOME` within ``helloPatience``, or `unavailable`). It learns the
/// cluster's brokers from `WELCOME` and `BROKERS` and keeps them in the Swift client's
/// ``BrokerList``. After a move on a dropped connection the relay tells the tab `ERROR hello`,
/// the protocol's word for a connection that has not said `HELLO`.
final class TabRelay: Sendable {
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
  /// The tab's requests, waiting for the thread.
  private let requests = Mutex<[BrokerMessage]>([])
  private let wake: WakeUpSignal
  private let stopping = Atomic<Bool>(false)
  private let stopped = DispatchSemaphore(value: 0)

  /// How long a `HELLO` may go unanswered before the tab moves to the next broker.
  static let helloPatience = Duration.milliseconds(1_500)

  /// Connects to the first of `brokers` (CURVE with `credentials`) and starts the thread.
  init(
    context: Context, brokers: [String], credentials: BrokerClient.CurveCredentials?,
    logger: Logger
  ) throws {
    precondition(!brokers.isEmpty, "a relay needs a broker")
    (outbound, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    wake = try WakeUpSignal()
    let dealer = try Self.socket(context, .dealer, credentials)
    let subscriber = try Self.socket(context, .sub, credentials)
    try dealer.connect(brokers[0])
    try subscriber.set(.subscribe, Array(BrokerMessage.brokersTopic.utf8))
    let sockets = UncheckedSockets(dealer: dealer, subscriber: subscriber)
    let thread = Thread { [self] in
      run(sockets, context: context, brokers: brokers, logger: logger)
      stopped.signal()
    }
    thread.name = "web-tab"
    thread.start()
  }

  /// Hands the thread a request for the broker.
  func send(_ request: BrokerMessage) {
    requests.withLock { $0.append(request) }
    wake.signal()
  }

  /// Stops the thread and closes the sockets; ``outbound`` finishes.
  func close() {
    guard !stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
    wake.signal()
    stopped.wait()
  }

  /// The sockets, created on the caller's thread and used only by the relay's thread after.
  private struct UncheckedSockets: @unchecked Sendable {
    let dealer: Socket
    let subscriber: Socket
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

  private func run(
    _ sockets: UncheckedSockets, context: Context, brokers given: [String], logger: Logger
  ) {
    let (dealer, subscriber) = (sockets.dealer, sockets.subscriber)
    // Tells when the DEALER's connection drops (a broker killed or stopped).
    let monitor = try? SocketMonitor(watching: dealer, context: context)
    defer {
      monitor?.close()
      dealer.close()
      subscriber.close()
      continuation.finish()
    }
    var poller = Poller()
    var subscribed: Set<String> = []
    var publisher: String?
    var brokers = BrokerList(given: given)
    // When the `HELLO` now waiting for its `WELCOME` went out.
    var helloSent: ContinuousClock.Instant?
    // Whether the front said that no broker answers this tab (once until one does).
    var saidUnanswered = false
    func move(_ reason: String) throws {
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
    do {
      let dealerIndex = try poller.add(dealer)
      let subscriberIndex = try poller.add(subscriber)
      let wakeIndex = poller.add(fileDescriptor: wake.fileDescriptor)
      let monitorIndex = try monitor.map { try poller.add($0.socket) }
      while !stopping.load(ordering: .sequentiallyConsistent) {
        let ready = try poller.poll(timeout: .seconds(1))
        if ready.contains(wakeIndex) {
          wake.clear()
          for request in requests.withLock({ $0.take() }) {
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
              try subscriber.set(.subscribe, Array(key.utf8))
            }
            _ = try dealer.send(request.frames, dontWait: true)
          }
        }
        if let monitor, let monitorIndex, ready.contains(monitorIndex) {
          while let event = try monitor.receive() {
            // Only the current broker's drop counts: after a move, the old one's is no news.
            if event.kind == .disconnected, event.endpoint == brokers.current, brokers.hasOthers {
              try move("its connection dropped")
              helloSent = nil
              // The cluster's brokers share an instance, so nothing the next one answers would
              // tell the tab it moved: the protocol's own word for a new connection does.
              continuation.yield(.reply(Self.moved))
            }
          }
        }
        if ready.contains(dealerIndex) {
          while let frames = try dealer.receive(dontWait: true) {
            // Only a WELCOME or an ERROR tells the relay anything: the rest pass undecoded.
            let telling = frames.first == Self.welcome || frames.first == Self.error
            switch telling ? try? BrokerMessage(frames: frames) : nil {
            case .welcome(_, let announced, _, let cluster)?:
              helloSent = nil
              saidUnanswered = false
              _ = brokers.learn(cluster)
              let endpoint = BrokerMessage.publisherEndpoint(
                announced: announced, router: brokers.current)
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
        }
        if ready.contains(subscriberIndex) {
          while let frames = try subscriber.receive(dontWait: true) {
            if frames.first == Self.brokersTopic,
              case .brokers(let cluster)? = try? BrokerMessage(published: frames)
            {
              _ = brokers.learn(cluster)
              continue
            }
            continuation.yield(.published(frames))
          }
        }
      }
    } catch {
      logger.error("A tab's broker sockets failed", metadata: ["error": "\(error)"])
    }
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
    case .sync(_, let key), .get(_, let key), .write(_, _, let key, _, _, _),
      .seed(_, let key, _, _, _, _):
      key
    default: nil
    }
  }
}

extension Array {
  /// Empties the array and returns what it held.
  fileprivate mutating func take() -> Self {
    var taken: Self = []
    swap(&taken, &self)
    return taken
  }
}
