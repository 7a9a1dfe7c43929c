import Foundation
import Synchronization

/// A pair of loopback endpoints that a broker can bind again after it stops.
///
/// `tcp://127.0.0.1:*` takes a port from the kernel's ephemeral range, the range that outgoing
/// connections take their source ports from. While a broker is down, any connection made on the
/// machine (a reconnecting client among them) may take its port, and binding it again fails with
/// "Address already in use". These ports lie below that range, where only an explicit bind takes
/// one, so a test that restarts a broker on the same endpoints can rely on them.
///
/// ```swift
/// func broker(_ endpoints: RestartableEndpoints) -> BrokerServer {
///   BrokerServer(configuration: .init(listen: endpoints.router, publish: endpoints.publisher))
/// }
/// let (first, endpoints) = try RestartableEndpoints.bind { endpoints in
///   let server = broker(endpoints)
///   try server.start()
///   return (server, endpoints)
/// }
/// first.stop()
/// try broker(endpoints).start()  // the same ports, whatever connected meanwhile
/// ```
public struct RestartableEndpoints: Sendable, Equatable {
  /// The ROUTER endpoint, `tcp://127.0.0.1:PORT`.
  public let router: String
  /// The PUB endpoint, on another port.
  public let publisher: String

  /// Two adjacent ports below the ephemeral range, the next pair of a sequence that starts at
  /// random: endpoints made in one process share no port until the range is used up, so a
  /// broker that is down between restarts keeps its ports from the process's other brokers.
  public init() {
    let ports = Self.ports
    let pair = Self.pairs.wrappingAdd(1, ordering: .relaxed).oldValue % (ports.count / 2)
    let router = ports.lowerBound + 2 * pair
    self.router = "tcp://127.0.0.1:\(router)"
    self.publisher = "tcp://127.0.0.1:\(router + 1)"
  }

  /// How many pairs this process took, from a random start.
  private static let pairs = Atomic<Int>(Int.random(in: 0..<8_192))

  /// Starts something on fresh endpoints, again on new ones while another socket holds a port.
  ///
  /// - Parameter start: Binds the endpoints; an error that says "Address already in use" (thrown
  ///   by `BrokerServer.start()`, or the output of a `broker` process) means "try others".
  /// - Returns: What `start` returned.
  /// - Throws: Any other error, or the last one after 20 taken pairs.
  public static func bind<T>(_ start: (RestartableEndpoints) throws -> T) throws -> T {
    for _ in 1..<attempts {
      do { return try start(RestartableEndpoints()) } catch where isTaken(error) {}
    }
    return try start(RestartableEndpoints())
  }

  /// Starts something on fresh endpoints, again on new ones while another socket holds a port.
  ///
  /// - Parameter start: Binds the endpoints, as the synchronous one does.
  /// - Returns: What `start` returned.
  /// - Throws: Any other error, or the last one after 20 taken pairs.
  public static func bind<T>(_ start: (RestartableEndpoints) async throws -> T) async throws -> T {
    for _ in 1..<attempts {
      do { return try await start(RestartableEndpoints()) } catch where isTaken(error) {}
    }
    return try await start(RestartableEndpoints())
  }

  private static let attempts = 20

  private static func isTaken(_ error: any Error) -> Bool {
    "\(error)".contains(String(cString: strerror(EADDRINUSE)))
  }

  /// Up to 16,384 unprivileged ports next to the ephemeral range, on its larger free side.
  private static let ports: ClosedRange<Int> = {
    let bounds = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
      .split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    let (low, high) = bounds.flatMap { $0.count == 2 ? ($0[0], $0[1]) : nil } ?? (32_768, 60_999)
    if low - 1_024 >= 65_535 - high { return max(1_024, low - 16_384)...(low - 1) }
    return (high + 1)...min(65_535, high + 16_384)
  }()
}
