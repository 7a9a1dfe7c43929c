import Foundation

extension BrokerClient {
  /// Whether `text` is an endpoint a client can connect to: `tcp://HOST:PORT` with a port number,
  /// or an endpoint of another ZeroMQ transport (`ipc://PATH`).
  ///
  /// The programs check their flags with it before connecting, so a mistyped endpoint is a usage
  /// error of the command that took it.
  ///
  /// - Parameters:
  ///   - text: One endpoint.
  ///   - binding: Whether a broker binds it rather than a client connects to it: then a TCP
  ///     port may also be `*` or `0` (any free port).
  /// - Returns: Whether ZeroMQ can be asked to connect to it (or bind it).
  package static func isEndpoint(_ text: Substring, binding: Bool = false) -> Bool {
    guard let separator = text.range(of: "://") else { return false }
    let scheme = text[..<separator.lowerBound]
    let address = text[separator.upperBound...]
    guard ["tcp", "ipc", "inproc", "ws", "wss"].contains(scheme), !address.isEmpty,
      !address.contains(where: \.isWhitespace), !address.contains(";")
    else { return false }
    guard scheme == "tcp" else { return true }
    guard let colon = address.lastIndex(of: ":"), colon != address.startIndex else { return false }
    let port = address[address.index(after: colon)...]
    if binding, port == "*" { return true }
    guard let number = Int(port) else { return false }
    return ((binding ? 0 : 1)...65_535).contains(number)
  }
}
