internal import CZeroMQ
import Foundation

/// Connection events of one socket, read from libzmq's monitor (`zmq_socket_monitor`): most
/// useful for handshakes, whose failures libzmq reports nowhere else (a connecting socket just
/// retries in silence).
///
/// ```swift
/// let monitor = try SocketMonitor(watching: dealer, context: context)
/// try poller.add(monitor.socket)
/// while let event = try monitor.receive() { ... }
/// ```
public final class SocketMonitor {
  /// One event.
  public struct Event: Equatable, Sendable {
    /// What happened.
    public let kind: Kind
    /// The event's value: an errno, a ZAP status code (`400`) or a protocol error code.
    public let value: UInt32
    /// The endpoint it concerns.
    public let endpoint: String

    /// An event, as the monitor reports it (or as a test or a simulation makes one).
    public init(kind: Kind, value: UInt32 = 0, endpoint: String) {
      self.kind = kind
      self.value = value
      self.endpoint = endpoint
    }
  }

  /// The kinds of event reported.
  public enum Kind: Equatable, Sendable {
    /// A connection was made.
    case connected
    /// A listening socket took in a connection.
    case accepted
    /// A connection was lost.
    case disconnected
    /// The security handshake succeeded.
    case handshakeSucceeded
    /// The peer closed the connection during the handshake (`value` is an errno), as a CURVE
    /// server does when the client encrypted its greeting for another server key.
    case handshakeFailedNoDetail
    /// The handshake broke the protocol (`value` is a `ZMQ_PROTOCOL_ERROR_*` code), e.g.
    /// plain text against CURVE.
    case handshakeFailedProtocol
    /// The peer's authenticator refused us (`value` is its ZAP status code, e.g. 400).
    case handshakeFailedAuth
    /// Any other event code.
    case other(UInt16)

    init(code: UInt16) {
      self =
        switch Int32(code) {
        case ZMQ_EVENT_CONNECTED: .connected
        case ZMQ_EVENT_ACCEPTED: .accepted
        case ZMQ_EVENT_DISCONNECTED: .disconnected
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: .handshakeSucceeded
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: .handshakeFailedNoDetail
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: .handshakeFailedProtocol
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: .handshakeFailedAuth
        default: .other(code)
        }
    }
  }

  /// The `ZMQ_PROTOCOL_ERROR_*` value of a ``Kind/handshakeFailedProtocol`` event when the two
  /// sides use different security mechanisms.
  public static let mechanismMismatch = UInt32(ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)

  /// The socket events arrive on; poll it, then call ``receive()``.
  public let socket: Socket

  /// Starts monitoring `watched`.
  ///
  /// - Parameters:
  ///   - watched: The socket to watch.
  ///   - context: The context both sockets live in.
  /// - Throws: ``ZMQError``.
  public init(watching watched: Socket, context: Context) throws {
    self.watched = watched
    let endpoint = "inproc://monitor-\(UUID().uuidString)"
    try watched.withUnsafeHandle { handle in
      _ = try zmqCall("zmq_socket_monitor") {
        zmq_socket_monitor(handle, endpoint, ZMQ_EVENT_ALL)
      }
    }
    socket = try Socket(context: context, type: .pair)
    try socket.connect(endpoint)
  }

  /// The next event, or `nil` when none is queued.
  ///
  /// - Throws: ``ZMQError``.
  public func receive() throws -> Event? {
    guard let frames = try socket.receive(dontWait: true) else { return nil }
    // Frame 1: the event code (2 bytes) and value (4 bytes) in the host's byte order, which is
    // little-endian on every platform we build for; frame 2: the endpoint.
    guard frames.count == 2, frames[0].count == 6 else { return Event(kind: .other(0), value: 0, endpoint: "") }
    let bytes = [UInt8](frames[0])
    let code = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
    let value = bytes[2...].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    return Event(kind: Kind(code: code), value: value, endpoint: String(decoding: frames[1], as: UTF8.self))
  }

  /// The socket watched, whose monitoring ``close()`` stops.
  private let watched: Socket

  /// Stops the monitoring and reading events. Call it before closing the watched socket: a
  /// socket still monitored is never reaped until its context terminates, and keeps its
  /// connections open meanwhile.
  public func close() {
    _ = try? watched.withUnsafeHandle { handle in zmq_socket_monitor(handle, nil, 0) }
    socket.close()
  }
}
