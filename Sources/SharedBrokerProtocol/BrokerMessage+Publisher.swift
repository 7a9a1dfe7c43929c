extension BrokerMessage {
  /// Where a client reaches the PUB socket a `WELCOME` announced: the broker announces where it
  /// is bound (`tcp://0.0.0.0:5556`), and the client uses the host it reached the ROUTER on.
  ///
  /// - Parameters:
  ///   - announced: The `WELCOME`'s publisher endpoint.
  ///   - router: The ROUTER endpoint the client connected to.
  /// - Returns: The endpoint to connect a SUB socket to.
  public static func publisherEndpoint(announced: String, router: String) -> String {
    guard announced.hasPrefix("tcp://"), router.hasPrefix("tcp://"),
      let port = announced.split(separator: ":").last,
      let colon = router.lastIndex(of: ":")
    else { return announced }
    return "\(router[..<colon]):\(port)"
  }
}
