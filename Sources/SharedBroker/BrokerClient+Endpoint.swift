import Foundation

extension BrokerClient {
  /// Whether `text` is an endpoint a client can connect to: `tcp://HOST:PORT` with a port number,
  /// or an endpoint of another ZeroMQ transport (`ipc://PATH`).
  ///
  /// The programs check their flags with it before connecting, so a mistyped endpoint is a usage
  /// error of the command that took it.
  ///
  /// - Parameter text: One endpoint.
  /// - Returns: Whether ZeroMQ can be asked to connect to it.
  package static func isEndpoint(_ text: Substring) -> Bool {
    guard let separator = text.range(of: "://") else { return false }
    let scheme = text[..<separator.lowerBound]
    let address = text[separator.upperBound...]
    guard ["tcp", "ipc", "inproc", "ws", "wss"].contains(scheme), !address.isEmpty,
      !address.contains(where: \.isWhitespace), !address.contains(";")
    else { return false }
    guard scheme == "tcp" else { return true }
    guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
      let port = Int(address[address.index(after: colon)...])
    else { return false }
    return (1...65_535).contains(port)
  }
}
