/// What a connecting socket's handshakes have shown so far, read from its ``SocketMonitor``.
///
/// libzmq tells a security mechanism mismatch only to the side that notices it first; the other
/// side just sees its connection close. So connections closed before their handshake finished
/// count too: once can be a cut connection, a CURVE server closes every one that does not match.
///
/// ```swift
/// var handshakes = HandshakeHistory(usesCurve: false)
/// while let event = try monitor.receive() { handshakes.record(event) }
/// if let problem = handshakes.problem, problem.isPermanent { ... }
/// ```
public struct HandshakeHistory: Equatable, Sendable {
  /// Why handshakes fail.
  public enum Problem: Equatable, Sendable, CustomStringConvertible {
    /// The server's authenticator refused this socket's key (its ZAP status, e.g. 400).
    case keyRefused(status: UInt32)
    /// The server uses CURVE and this socket does not.
    case curveRequired
    /// This socket uses CURVE and the server does not.
    case curveNotUsed
    /// The handshake broke the protocol otherwise (a `ZMQ_PROTOCOL_ERROR_*` code).
    case protocolError(UInt32)
    /// The server closed this many connections in a row before their handshake finished
    /// (counted up to ``closesInARow``).
    case closed(times: Int, usesCurve: Bool)

    /// How many closed handshakes in a row make a ``closed(times:usesCurve:)`` permanent.
    public static let closesInARow = 3

    /// Whether retrying cannot help: a configuration error, not a cut connection.
    public var isPermanent: Bool {
      if case .closed(let times, _) = self { return times >= Self.closesInARow }
      return true
    }

    /// The reason in words, naming the broker as the server.
    public var description: String {
      switch self {
      case .keyRefused(let status):
        "the broker refused this client's CURVE key (status \(status)): "
          + "its public key is not on the broker's allow-list"
      case .curveRequired: "the broker requires CURVE"
      case .curveNotUsed: "the broker does not use CURVE"
      case .protocolError(let code): "the handshake broke the protocol (error \(code))"
      case .closed(let times, let usesCurve):
        "the broker closed the connection during the handshake "
          + (times == 1 ? "once" : "\(times) times in a row")
          // A broker without CURVE also closes when it notices the mismatch first.
          + (usesCurve
            ? ", as it does when the server key this client uses is not the broker's public key"
              + " (or when the broker does not use CURVE)"
            : ", as a broker does that requires CURVE or that holds as many clients as it can")
      }
    }
  }

  /// Whether this socket has CURVE keys.
  public let usesCurve: Bool
  /// Whether any connection was made.
  public private(set) var connected = false
  /// Whether the current connection's handshake succeeded.
  public private(set) var succeeded = false
  /// The last failure since a handshake last succeeded.
  public private(set) var problem: Problem?
  private var closedInARow = 0

  /// A history with no events yet.
  ///
  /// - Parameter usesCurve: Whether the socket has CURVE keys.
  public init(usesCurve: Bool) {
    self.usesCurve = usesCurve
  }

  /// Takes in one event of the socket's monitor.
  public mutating func record(_ event: SocketMonitor.Event) {
    switch event.kind {
    case .connected:
      connected = true
    case .handshakeSucceeded:
      (succeeded, problem, closedInARow) = (true, nil, 0)
    case .handshakeFailedAuth:
      problem = .keyRefused(status: event.value)
    case .handshakeFailedProtocol where event.value == SocketMonitor.mechanismMismatch:
      problem = usesCurve ? .curveNotUsed : .curveRequired
    case .handshakeFailedProtocol:
      problem = .protocolError(event.value)
    case .disconnected where succeeded:
      // The next connection starts its own handshake.
      succeeded = false
    case .disconnected:
      // libzmq reports every failed handshake's close; a stated reason outranks the count.
      // Counted up to where it becomes permanent: a problem that stays the same is told once.
      closedInARow = min(closedInARow + 1, Problem.closesInARow)
      if problem == nil || problem?.isClosed == true {
        problem = .closed(times: closedInARow, usesCurve: usesCurve)
      }
    default:
      break
    }
  }
}

extension HandshakeHistory.Problem {
  fileprivate var isClosed: Bool {
    if case .closed = self { return true }
    return false
  }
}
