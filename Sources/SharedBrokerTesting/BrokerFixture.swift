public import Foundation
import Logging
public import SharedBroker
public import SharedBrokerServer
import Synchronization

/// A broker running inside the test process, on loopback ports that stay its own across
/// ``restart()`` (see ``RestartableEndpoints``), with helpers to make
/// independent clients (each with its own ZeroMQ context, like separate processes) and to stop
/// and restart the broker with its data.
///
/// ```swift
/// try await withBrokerFixture { fixture in
///   let client = fixture.makeClient()
///   try await withDependencies { $0.brokerClient = client } operation: {
///     @Shared(.broker("count")) var count = 0
///     ...
///   }
/// }
/// ```
public final class BrokerFixture: Sendable {
  /// Where the broker keeps its data, when persistent.
  public let dataDirectory: URL?
  /// The client timing used by ``makeClient(configuration:)`` by default.
  public let clientConfiguration: BrokerClient.Configuration
  /// The broker's CURVE settings, if any.
  public let curve: BrokerConfiguration.CurveSecurity?
  /// How long the broker lets a client stay silent before forgetting it.
  public let clientTimeout: Duration
  /// How long after each start the broker collects clients' copies of keys it lost.
  public let seedWindow: Duration
  private let clock: any Clock<Duration>
  private let maxValueSize: Int
  private let state: Mutex<(server: BrokerServer?, endpoints: BrokerEndpoints?, clients: [BrokerClient])>
  private let ownsDirectory: Bool

  /// Starts a broker on free loopback ports below the ephemeral range.
  ///
  /// - Parameters:
  ///   - persistent: Keep data in a fresh temporary directory, so ``restart()`` keeps it.
  ///   - dataDirectory: Keep data in this directory instead.
  ///   - maxValueSize: The broker's value size limit.
  ///   - curve: CURVE encryption and the client allow-list.
  ///   - clientTimeout: How long the broker lets a client stay silent before forgetting it.
  ///   - seedWindow: How long after each start the broker collects clients' copies of keys it
  ///     does not have, refusing writes to them meanwhile. Zero (the default) lets a test write at
  ///     once; a test of memory-only restarts gives it the `broker` program's 3 seconds.
  ///   - clock: The clock that times client silence (a `TestClock` makes expiry deterministic).
  ///   - clientConfiguration: Heartbeat timing for the clients this fixture makes (fast by
  ///     default, so tests notice a stopped broker quickly).
  /// - Throws: When the broker cannot start.
  public init(
    persistent: Bool = false,
    dataDirectory: URL? = nil,
    maxValueSize: Int = 1 << 20,
    curve: BrokerConfiguration.CurveSecurity? = nil,
    clientTimeout: Duration = .seconds(3600),
    seedWindow: Duration = .zero,
    clock: any Clock<Duration> = ContinuousClock(),
    clientConfiguration: BrokerClient.Configuration = BrokerClient.Configuration(
      heartbeatInterval: .milliseconds(100), missedHeartbeats: 3
    )
  ) throws {
    let directory =
      dataDirectory
      ?? (persistent
        ? FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID().uuidString)")
        : nil)
    self.dataDirectory = directory
    self.ownsDirectory = dataDirectory == nil && directory != nil
    self.clientConfiguration = clientConfiguration
    self.curve = curve
    self.clientTimeout = clientTimeout
    self.seedWindow = seedWindow
    self.clock = clock
    self.maxValueSize = maxValueSize
    state = Mutex((nil, nil, []))
    let (server, endpoints) = try RestartableEndpoints.bind { endpoints in
      let server = makeServer(listen: endpoints.router, publish: endpoints.publisher)
      return (server, try server.start())
    }
    state.withLock { $0 = (server, endpoints, []) }
  }

  deinit {
    shutdown()
  }

  private static let logger: Logger = {
    var logger = Logger(label: "broker-fixture")
    logger.logLevel = .critical
    return logger
  }()

  /// The broker's ROUTER endpoint, stable across ``restart()``.
  public var endpoint: String { state.withLock { $0.endpoints!.router } }

  /// The running broker, if any.
  public var server: BrokerServer? { state.withLock { $0.server } }

  /// A new client of this broker with its own context; the fixture closes it on shutdown.
  ///
  /// - Parameter configuration: Heartbeat timing (the fixture's default otherwise).
  /// - Returns: The client.
  public func makeClient(configuration: BrokerClient.Configuration? = nil) -> BrokerClient {
    let client = BrokerClient(
      endpoint: endpoint, configuration: configuration ?? clientConfiguration, logger: Self.logger
    )
    state.withLock { $0.clients.append(client) }
    return client
  }

  /// Stops the broker (its clients keep running and will reconnect).
  public func stop() {
    let server = state.withLock { state in
      defer { state.server = nil }
      return state.server
    }
    server?.stop()
  }

  /// Starts the broker again on the same ports, with the same data.
  ///
  /// - Throws: When the ports or the data cannot be reused.
  public func restart() throws {
    stop()
    let endpoints = state.withLock { $0.endpoints! }
    let server = makeServer(listen: endpoints.router, publish: endpoints.publisher)
    try server.start()
    state.withLock { $0.server = server }
  }

  private func makeServer(listen: String, publish: String) -> BrokerServer {
    BrokerServer(
      configuration: BrokerConfiguration(
        listen: listen, publish: publish, dataDirectory: dataDirectory, maxValueSize: maxValueSize,
        curve: curve, clientTimeout: clientTimeout, seedWindow: seedWindow
      ),
      logger: Self.logger,
      clock: clock
    )
  }

  /// Closes every client, stops the broker and removes a temporary data directory.
  public func shutdown() {
    let clients = state.withLock { state in
      defer { state.clients = [] }
      return state.clients
    }
    for client in clients { client.close() }
    stop()
    if ownsDirectory, let dataDirectory { try? FileManager.default.removeItem(at: dataDirectory) }
  }
}

/// Runs `body` with a fresh broker fixture and shuts it down afterwards, on success and error.
///
/// `body` runs in the caller's isolation, so a `@MainActor` test (where stores live) can use
/// its stores inside it.
///
/// - Parameters:
///   - persistent: Keep data in a temporary directory so restarts keep it.
///   - isolation: The caller's actor, inferred.
///   - body: The test.
/// - Returns: What `body` returns.
public func withBrokerFixture<R>(
  persistent: Bool = false,
  isolation: isolated (any Actor)? = #isolation,
  _ body: (BrokerFixture) async throws -> R
) async throws -> R {
  let fixture = try BrokerFixture(persistent: persistent)
  defer { fixture.shutdown() }
  return try await body(fixture)
}
