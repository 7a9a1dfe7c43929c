public import Foundation

/// How a ``BrokerServer`` listens and where it keeps its data.
public struct BrokerConfiguration: Sendable {
  /// The ROUTER endpoint clients connect to, e.g. `tcp://0.0.0.0:5555` (`*` for any free port).
  public var listen: String
  /// The PUB endpoint; by default the listen port + 1 (or any free port when listening on `*` or
  /// port 0).
  public var publish: String?
  /// Where accepted writes are logged; `nil` keeps everything in memory.
  public var dataDirectory: URL?
  /// The largest value accepted, in bytes.
  public var maxValueSize: Int
  /// CURVE encryption and client authentication; `nil` serves plain text to anyone.
  public var curve: CurveSecurity?
  /// How long a client may stay silent before the broker forgets it. Live clients ping every
  /// heartbeat; a forgotten client's exactly-once records are dropped (see PROTOCOL.md).
  public var clientTimeout: Duration
  /// How long after its start the broker collects clients' copies of keys it does not have
  /// (`SEED`), refusing writes to those keys with `seeding` meanwhile, so that the newest copy
  /// wins rather than the first client back (see PROTOCOL.md). Zero lets writes through at once.
  public var seedWindow: Duration
  /// The most updates the PUB socket queues for one subscriber that does not read; beyond it
  /// that subscriber misses updates (and finds out from its heartbeats), so a stalled
  /// subscriber holds at most this many values in the broker's memory.
  public var maxQueuedUpdates: Int
  /// The ROUTER endpoint other machines reach this broker at, which a broker of a cluster
  /// registers for the clients to learn (`tcp://broker2:5555`). By default, the endpoint it
  /// bound, with a wildcard host (`0.0.0.0`, `::`) replaced by this machine's host name.
  public var advertise: String?

  /// CURVE settings of a broker: its secret key and the client public keys it admits.
  ///
  /// libzmq accepts any client key when no ZAP handler runs, so the broker installs its own
  /// handler whenever CURVE is on, and denies every key that is not listed.
  public struct CurveSecurity: Sendable {
    /// The broker's secret key (Z85).
    public var secretKey: String
    /// The client public keys (Z85) allowed to connect, and what each may read and write.
    public var allowList: AllowList
    /// The client public keys (Z85) allowed to connect.
    public var allowedClientKeys: Set<String> { Set(allowList.entries.keys) }

    /// Creates the settings.
    ///
    /// - Parameters:
    ///   - secretKey: The broker's secret key (Z85).
    ///   - allowList: The client public keys (Z85) to admit, and their permissions.
    public init(secretKey: String, allowList: AllowList) {
      self.secretKey = secretKey
      self.allowList = allowList
    }

    /// Creates settings that admit these client keys to every key.
    ///
    /// - Parameters:
    ///   - secretKey: The broker's secret key (Z85).
    ///   - allowedClientKeys: The client public keys (Z85) to admit.
    public init(secretKey: String, allowedClientKeys: Set<String>) {
      self.init(secretKey: secretKey, allowList: AllowList(allowing: allowedClientKeys))
    }
  }

  /// Creates a configuration.
  ///
  /// - Parameters:
  ///   - listen: The ROUTER endpoint.
  ///   - publish: The PUB endpoint, or `nil` to derive it from `listen`.
  ///   - dataDirectory: Where to persist writes.
  ///   - maxValueSize: The largest value accepted, in bytes.
  ///   - curve: CURVE encryption and the client allow-list.
  ///   - clientTimeout: How long a client may stay silent before it is forgotten.
  ///   - seedWindow: How long after start clients' copies of lost keys are collected.
  ///   - maxQueuedUpdates: The most updates queued for one subscriber.
  ///   - advertise: The endpoint a cluster's clients reach this broker at.
  public init(
    listen: String = "tcp://0.0.0.0:5555",
    publish: String? = nil,
    dataDirectory: URL? = nil,
    maxValueSize: Int = 1 << 20,
    curve: CurveSecurity? = nil,
    clientTimeout: Duration = .seconds(3600),
    seedWindow: Duration = .seconds(3),
    maxQueuedUpdates: Int = 1_000,
    advertise: String? = nil
  ) {
    self.listen = listen
    self.publish = publish
    self.dataDirectory = dataDirectory
    self.maxValueSize = maxValueSize
    self.curve = curve
    self.clientTimeout = clientTimeout
    self.seedWindow = seedWindow
    self.maxQueuedUpdates = maxQueuedUpdates
    self.advertise = advertise
  }

  /// The endpoint a cluster's clients reach a broker at that bound `router`: ``advertise``, or
  /// the bound endpoint with a wildcard host replaced by `hostName`.
  func advertised(bound router: String, hostName: String) -> String {
    if let advertise { return advertise }
    for wildcard in ["tcp://0.0.0.0:", "tcp://[::]:", "tcp://*:"] where router.hasPrefix(wildcard) {
      return "tcp://\(hostName):" + router.dropFirst(wildcard.count)
    }
    return router
  }

  /// The PUB endpoint to bind: explicit, or next to the listen endpoint.
  var publishEndpoint: String {
    if let publish { return publish }
    if listen.hasPrefix("tcp://"), let colon = listen.lastIndex(of: ":") {
      let port = listen[listen.index(after: colon)...]
      let host = listen[..<colon]
      // A listen port the system picks (libzmq's `*`, or 0) has no next port: so does this one.
      if port == "*" || port == "0" { return "\(host):*" }
      if let number = Int(port) { return "\(host):\(number + 1)" }
    }
    return listen + ".pub"
  }
}

/// What the broker has seen since it started; rejected input is counted, never fatal.
public struct BrokerStatistics: Equatable, Sendable {
  /// Requests received (valid or not).
  public var requests = 0
  /// `HELLO`s received.
  public var hellos = 0
  /// `PING`s received.
  public var pings = 0
  /// `GET`s received.
  public var gets = 0
  /// `SYNC`s received.
  public var syncs = 0
  /// `SEED`s (clients' copies) received.
  public var seeds = 0
  /// `WRITE`s received.
  public var writes = 0
  /// Writes applied.
  public var writesApplied = 0
  /// Writes rejected by compare-and-set (stale base or already applied).
  public var writesRejected = 0
  /// Messages with the wrong frames or fields.
  public var malformed = 0
  /// Messages with an unknown command.
  public var unknownCommands = 0
  /// Requests with an invalid key.
  public var invalidKeys = 0
  /// Writes with a value over the size limit.
  public var oversized = 0
  /// Writes refused because they could not be persisted.
  public var storageErrors = 0
  /// Clients' copies adopted for keys the broker had lost.
  public var seedsAdopted = 0
  /// Requests refused because their connection had not said `HELLO`.
  public var withoutHello = 0
  /// Keys with a value.
  public var keys = 0
  /// Connections refused by the CURVE allow-list.
  public var deniedClients = 0
  /// Requests answered `forbidden`: a key outside the client's permissions, a client id that
  /// belongs to another client key, or a key no longer on the allow-list.
  public var forbidden = 0
  /// Clients the broker knows (heard from within the client timeout, or found in its data): it
  /// keeps their exactly-once records, so a client gone for a moment writes on where it left.
  public var clients = 0
  /// Clients heard from within the last 5 seconds, counted once a second: the ones running now
  /// (a client pings every heartbeat).
  public var activeClients = 0
  /// Connections open to the ROUTER (one per client process, as libzmq's monitor reports them).
  public var connections = 0
  /// Clients forgotten after staying silent for longer than the client timeout.
  public var forgottenClients = 0
  /// `HELLO`s and `PING`s answered `unavailable`: the broker could not reach its cluster's store.
  public var unavailable = 0
  /// `GET`s and writes answered `seeding` during the seed window.
  public var seedingRefusals = 0
  /// Bytes of the requests received (every frame).
  public var bytesReceived = 0
  /// Bytes of the answers and updates sent (every frame; an update counts once, however many
  /// subscribers get it).
  public var bytesSent = 0
  /// Answers libzmq could not queue (the connection gone, or its queue full). Updates a
  /// subscriber's full queue drops are not seen by the broker: that client resyncs the key.
  public var answersDropped = 0
  /// Connections shut down at once because the broker held as many clients as its open-file
  /// limit allows (``clientCapacity``).
  public var rejectedConnections = 0
  /// How many clients the broker can hold within its open-file limit (two connections each).
  public var clientCapacity = 0

  /// Everything refused as bad input.
  public var rejectedInput: Int { malformed + unknownCommands + invalidKeys + oversized }
}

/// The endpoints a started broker actually bound (with real ports).
public struct BrokerEndpoints: Equatable, Sendable {
  /// Where clients connect their DEALER.
  public let router: String
  /// Where clients connect their SUB.
  public let publisher: String
}
