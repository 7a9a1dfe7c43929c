import Foundation
public import Logging
internal import Sharing
import Synchronization
internal import ZeroMQ

/// A process's connection to the broker: one DEALER for requests, one SUB for updates, and the
/// references of every `.broker` key it mirrors.
///
/// One I/O thread owns both sockets and waits on their descriptors. The client's state, every
/// key's included, is one state machine in one lock-holding storage: a mutation records itself
/// there and wakes the thread with an eventfd, and the thread encodes and sends it, so no socket
/// call runs on a writer's thread. The client reports ``ConnectionState/disconnected`` as soon
/// as its connection drops (the broker's process ended), or after
/// ``Configuration/missedHeartbeats`` unanswered `PING`s (a broker frozen or cut off without
/// closing the connection). It keeps every mutation pending, and resyncs and resends when the
/// broker answers again.
///
/// ```swift
/// let client = BrokerClient(endpoint: "tcp://127.0.0.1:5555")
/// prepareDependencies { $0.brokerClient = client }
/// @Shared(.broker("stats")) var stats = Stats()
/// ```
public final class BrokerClient: Sendable {
  /// Timing of heartbeats and reconnection.
  public struct Configuration: Sendable {
    /// How often to ping the broker. A broker that ends closes its connections, which the
    /// client notices at once; heartbeats find the silent failures (a frozen process, a lost
    /// network) and tell the broker the client is alive. Each costs the broker a receive and a
    /// send, so the default of 2.5 s keeps 8,000 idle clients under a tenth of a core. Retries
    /// (`HELLO` to a broker not yet answering, a key's questions, writes the broker asked to
    /// resend) wait at most 500 ms, or this interval if it is shorter.
    public var heartbeatInterval: Duration
    /// How many intervals without any answer count as a lost broker.
    public var missedHeartbeats: Int
    /// The high-water mark of the update subscription (updates beyond it are dropped by
    /// ZeroMQ and recovered as a gap).
    public var subscriberHighWaterMark: Int32
    /// How many writes per key may await the broker's answer at once. Pipelining lets a fast
    /// writer publish every step instead of one batch per round trip; 1 sends one at a time.
    /// A rejected write (another client got in first) narrows a key's window to 1 and each
    /// applied one widens it by one, so contended keys batch instead of resending long chains.
    public var maxWritesInFlight: Int

    /// CURVE keys: the broker's public key and this client's key pair; `nil` for plain text.
    public var curve: CurveCredentials?

    /// Creates a configuration.
    public init(
      heartbeatInterval: Duration = .milliseconds(2_500),
      missedHeartbeats: Int = 3,
      subscriberHighWaterMark: Int32 = 100_000,
      maxWritesInFlight: Int = 32,
      curve: CurveCredentials? = nil
    ) {
      self.heartbeatInterval = heartbeatInterval
      self.missedHeartbeats = missedHeartbeats
      self.subscriberHighWaterMark = subscriberHighWaterMark
      self.maxWritesInFlight = max(1, maxWritesInFlight)
      self.curve = curve
    }
  }

  /// What a client needs to talk to a CURVE broker.
  public struct CurveCredentials: Sendable {
    /// The broker's public key (Z85).
    public var serverPublicKey: String
    /// This client's public key (Z85), which must be on the broker's allow-list.
    public var publicKey: String
    /// This client's secret key (Z85).
    public var secretKey: String

    /// Creates credentials.
    ///
    /// - Parameters:
    ///   - serverPublicKey: The broker's public key (Z85).
    ///   - publicKey: This client's public key (Z85).
    ///   - secretKey: This client's secret key (Z85).
    public init(serverPublicKey: String, publicKey: String, secretKey: String) {
      self.serverPublicKey = serverPublicKey
      self.publicKey = publicKey
      self.secretKey = secretKey
    }
  }

  /// Where the client stands with the broker.
  public enum ConnectionState: String, Sendable {
    /// Never reached the broker yet.
    case connecting
    /// Connected, waiting for snapshots of its keys.
    case syncing
    /// Connected and in sync.
    case connected
    /// The broker stopped answering; mutations stay pending locally.
    case disconnected
    /// The broker refused the security handshake for a reason retrying cannot fix (see
    /// ``handshakeFailureReason``); mutations stay pending locally.
    case refused
  }

  /// The broker's ROUTER endpoint, or the brokers' endpoints separated by commas.
  public let endpoint: String
  /// The brokers' ROUTER endpoints, tried in turn: the client moves to the next one when its
  /// broker stops answering, or cannot reach its cluster's store.
  public let endpoints: [String]
  /// The endpoint of the broker the client talks to (or tries) now: one of ``knownBrokers``.
  public var currentEndpoint: String { storage.brokers.current }

  /// The brokers this client moves among: the ones it was given, then the others its cluster
  /// announced (a broker of a cluster names them all in `WELCOME`, and again whenever one joins
  /// or leaves), so that a client given one broker finds the rest.
  public var knownBrokers: [String] { storage.brokers.all }
  /// This client's id, sent with every write (fresh per process).
  public let id: String
  let configuration: Configuration
  let logger: Logger
  private let wakeUp: WakeUpSignal?
  private let thread = Mutex<IOThread?>(nil)
  private let loop: ClientLoop
  /// The keys' snapshots, the mailbox, and the connection's state, as the I/O thread and the
  /// references share them.
  let storage: ClientStorage

  /// Connects (in the background) to a broker.
  ///
  /// - Parameters:
  ///   - endpoint: The broker's ROUTER endpoint, e.g. `tcp://127.0.0.1:5555`, or the endpoints of
  ///     the brokers of a cluster separated by commas (`tcp://a:5555,tcp://b:5555`).
  ///   - configuration: Heartbeat timing.
  ///   - logger: Where to log connection changes and refused writes.
  public convenience init(
    endpoint: String,
    configuration: Configuration = Configuration(),
    logger: Logger = Logger(label: "broker-client")
  ) {
    self.init(
      endpoints: endpoint.split(separator: ",").map {
        String($0).trimmingCharacters(in: .whitespaces)
      },
      configuration: configuration, logger: logger)
  }

  /// Connects (in the background) to one of several brokers of a cluster, and moves to the next
  /// when its broker stops answering (after ``Configuration/missedHeartbeats`` heartbeats) or
  /// cannot reach the cluster's store. Writes in flight are resent to the next broker and applied
  /// once: the brokers share their exactly-once records.
  ///
  /// - Parameters:
  ///   - endpoints: The brokers' ROUTER endpoints, tried in this order.
  ///   - configuration: Heartbeat timing.
  ///   - logger: Where to log connection changes and refused writes.
  public init(
    endpoints: [String],
    configuration: Configuration = Configuration(),
    logger: Logger = Logger(label: "broker-client")
  ) {
    precondition(!endpoints.isEmpty, "a BrokerClient needs at least one endpoint")
    self.endpoints = endpoints
    self.endpoint = endpoints.joined(separator: ",")
    self.id = UUID().uuidString
    self.configuration = configuration
    self.logger = logger
    let wakeUp = try? WakeUpSignal()
    self.wakeUp = wakeUp
    let brokers = BrokerList(given: endpoints)
    storage = ClientStorage(
      brokers: brokers, endpoint: endpoint, logger: logger, wake: { wakeUp?.signal() })
    let driver = ClientDriver(
      machine: ClientMachine(
        id: id, brokers: brokers, usesCurve: configuration.curve != nil,
        heartbeat: configuration.heartbeatInterval,
        missedHeartbeats: configuration.missedHeartbeats,
        maxWritesInFlight: configuration.maxWritesInFlight, now: .now
      ),
      storage: storage)
    let loop = ClientLoop(
      driver: driver, wakeUp: wakeUp, configuration: configuration, logger: logger)
    self.loop = loop
    thread.withLock { $0 = IOThread(name: "sm-client") { loop.run() } }
  }

  deinit {
    close()
  }

  /// Stops the I/O thread and closes the sockets. Pending mutations stay local.
  public func close() {
    let observers = storage.withConnection { report in
      report.closed = true
      defer { report.observers = [:] }
      return report.observers
    }
    for observer in observers.values { observer.finish() }
    storage.close()
    wakeUp?.signal()
    storage.progress.signal()
    let thread = self.thread.withLock { thread in
      defer { thread = nil }
      return thread
    }
    // A client released on its own I/O thread cannot wait for itself.
    if let thread, !thread.isCurrent { thread.joinBlocking() }
  }

  // MARK: - State

  /// The current connection state.
  public var connectionState: ConnectionState { storage.withConnection { $0.state } }

  /// The connection state now and after every change.
  public var connectionStates: AsyncStream<ConnectionState> {
    let (stream, continuation) = AsyncStream<ConnectionState>.makeStream()
    let id = UUID()
    // The current state is yielded under the lock, as every change is: a change made meanwhile
    // on the I/O thread cannot arrive before it and be overwritten by the older state.
    let closed = storage.withConnection { report in
      guard !report.closed else { return true }
      report.observers[id] = continuation
      continuation.yield(report.state)
      return false
    }
    if closed { continuation.finish() }
    continuation.onTermination = { [weak storage] _ in
      _ = storage?.withConnection { $0.observers.removeValue(forKey: id) }
    }
    return stream
  }

  /// Whether any mutation is still waiting for the broker's confirmation.
  public var hasUnconfirmedWrites: Bool {
    storage.unconfirmedWriteCount() > 0
  }

  /// How many mutations (`withLock` calls) of all keys still wait for the broker's confirmation.
  public var unconfirmedWriteCount: Int {
    storage.unconfirmedWriteCount()
  }

  /// How many mutations (`withLock` calls) of all keys the broker refused because this client's
  /// key may not write them (`forbidden`). A refused mutation is undone, not retried: the key's
  /// value goes back to the broker's, and its ``Shared`` reference's `saveError` says why.
  public var refusedWriteCount: Int {
    storage.refusedWriteCount()
  }

  /// Whether the broker holds this client's writes back: for a while after it starts (its seed
  /// window) it collects its clients' copies of the keys it lost, and answers writes, and reads
  /// of keys it has no value for, with `seeding`. True from such an answer until the broker
  /// answers a read or a write of this client's (or the connection is lost); the writes stay
  /// pending and go out again meanwhile.
  public var brokerHoldsWritesBack: Bool {
    storage.isHeldBack
  }

  /// Whether the broker refused the handshake in a way that retrying cannot change.
  private var isRefused: Bool {
    storage.withConnection(\.isRefused)
  }

  /// Why the broker refused the last security handshake, while it does.
  public var handshakeFailureReason: String? {
    storage.withConnection { $0.handshakeFailure?.reason }
  }

  /// Waits until the broker has confirmed every mutation of `keys` (all keys by default) and
  /// the client is in sync.
  ///
  /// - Parameters:
  ///   - keys: The keys to wait for, or `nil` for all.
  ///   - timeout: The longest wait.
  /// - Throws: ``BrokerError`` with the code ``BrokerError/Code/timedOut`` when the broker did not
  ///   confirm in time, ``BrokerError/Code/handshakeFailed`` when it refuses the connection (at
  ///   once when the refusal is one that retrying cannot change), or the key's refusal, at once,
  ///   when this client's key may not read or write one of the keys (`forbidden`).
  public func waitUntilConfirmed(keys: [String]? = nil, timeout: Duration = .seconds(10))
    async throws
  {
    let confirmed = await storage.progress.wait(until: .now + timeout) { [self] in
      (connectionState == .connected
        && storage.areSynced(keys, confirmed: true)) || isRefused
        || storage.forbidden(keys, writes: true) != nil
    }
    if let refusal = storage.forbidden(keys, writes: true) { throw refusal }
    guard confirmed, !isRefused else {
      if let failure = storage.withConnection({ $0.handshakeFailure }) {
        throw BrokerError(
          .handshakeFailed, "cannot connect to the broker at \(endpoint): \(failure.reason)")
      }
      throw BrokerError(
        .timedOut,
        "the broker at \(endpoint) did not confirm all writes within \(timeout) "
          + "(connection: \(connectionState.rawValue))"
      )
    }
  }

  /// Waits until the client is connected and in sync with the broker.
  ///
  /// - Parameter timeout: The longest wait.
  /// - Throws: ``BrokerError`` with the code ``BrokerError/Code/timedOut`` when the broker cannot
  ///   be reached in time, ``BrokerError/Code/handshakeFailed`` when it refuses the connection,
  ///   or the refusal of a key this client's key may not read (`forbidden`), at once.
  public func waitUntilConnected(timeout: Duration = .seconds(10)) async throws {
    let connected = await storage.progress.wait(until: .now + timeout) { [self] in
      (connectionState == .connected && storage.areSynced(nil, confirmed: false)) || isRefused
        || storage.forbidden(nil, writes: false) != nil
    }
    if let failure = storage.withConnection({ $0.handshakeFailure }) {
      throw BrokerError(
        .handshakeFailed, "cannot connect to the broker at \(endpoint): \(failure.reason)")
    }
    if let refusal = storage.forbidden(nil, writes: false) { throw refusal }
    guard connected else {
      if let unavailable = storage.withConnection({ $0.unavailableBroker }) {
        throw BrokerError(
          .timedOut,
          "no broker at \(endpoint) served within \(timeout): the broker at \(unavailable) answered "
            + "that it cannot reach its cluster's store (etcd)"
        )
      }
      throw BrokerError(
        .timedOut,
        "could not reach the broker at \(endpoint) within \(timeout)"
      )
    }
  }

  // MARK: - References

  func reference<Value: Sendable & Equatable>(
    key: String, initialValue: Value, codec: BrokerCodec<Value>
  ) -> BrokerReference<Value> {
    storage.reference(key: key, initialValue: initialValue, codec: codec) { [storage] slot in
      BrokerReference<Value>(
        key: key, initialValue: initialValue, slot: slot, storage: storage, client: self)
    }
  }

  /// Asks for a fresh snapshot of `key` and waits for it.
  func resynchronize(key: String, slot: KeySlot) async throws {
    storage.reload(slot)
    try await waitUntilConfirmed(keys: [key])
  }
}
