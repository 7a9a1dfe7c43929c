import Foundation
internal import ZeroMQ

/// Why a broker could not start: which endpoint or directory, and the system's reason.
///
/// ```
/// cannot bind the PUB endpoint tcp://0.0.0.0:5556 (the listen port + 1; choose another with
/// --publish): Address already in use
/// ```
public struct BrokerStartError: Error, CustomStringConvertible {
  /// Which of the broker's sockets an endpoint is for.
  enum Endpoint {
    /// The ROUTER socket clients send requests to (`--listen`).
    case listen
    /// The PUB socket, at an endpoint given explicitly (`--publish`).
    case publish
    /// The PUB socket, at the endpoint derived from the listen one (its port + 1).
    case derivedPublish
  }

  /// A readable explanation.
  public let description: String

  /// The endpoint could not be bound.
  static func bind(_ socket: Endpoint, _ endpoint: String, _ error: any Error) -> Self {
    let what =
      switch socket {
      case .listen: "the listen endpoint \(endpoint)"
      case .publish: "the PUB endpoint \(endpoint)"
      case .derivedPublish:
        "the PUB endpoint \(endpoint) (the listen port + 1; choose another with --publish)"
      }
    var reason = (error as? ZMQError)?.message ?? "\(error)"
    // A host name libzmq cannot take as an interface (ENODEV), or an address of another machine.
    if let code = (error as? ZMQError)?.code, [ENODEV, EADDRNOTAVAIL].contains(code) {
      reason += " (the host is not an address or network interface of this machine)"
    }
    return Self(description: "cannot bind \(what): \(reason)")
  }

  /// The data directory could not be created, read or written.
  static func dataDirectory(_ path: String, _ error: any Error) -> Self {
    Self(description: "cannot use the data directory \(path): \(systemReason(error))")
  }

  /// The cluster's shared store could not be read.
  static func cluster(_ error: any Error) -> Self {
    Self(description: "cannot load the keys from the cluster's store: \(error)")
  }

  /// The cluster's shared store could not be reached or set up (`broker --store etcd://…`).
  package static func clusterStore(_ endpoints: String, _ error: any Error, hint: String? = nil)
    -> Self
  {
    Self(
      description: "cannot use the cluster's store at \(endpoints): \(error)"
        + (hint.map { "; \($0)" } ?? ""))
  }

  /// The POSIX reason inside a Foundation error ("Permission denied"), else the error itself.
  private static func systemReason(_ error: any Error) -> String {
    if let error = error as? StorageError { return error.reason }
    let error = ((error as? CocoaError)?.underlying ?? error) as NSError
    guard error.domain == NSPOSIXErrorDomain else { return "\(error)" }
    return String(cString: strerror(Int32(error.code)))
  }
}
