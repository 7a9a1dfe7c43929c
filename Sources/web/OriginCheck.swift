/// Which pages may open a tab's WebSocket: a browser names the page's origin in `Origin`, and a
/// page of another site must not reach the broker through a front it happens to see. The
/// front's own pages (the origin whose host is the request's `Host`) and the configured
/// origins are allowed; a request without `Origin` comes from no browser page and is allowed.
struct OriginCheck: Sendable {
  let allowed: Set<String>

  /// Whether `text` is an origin as a browser sends it: `http://` or `https://`, a host, and
  /// an optional port, with no path.
  static func isOrigin(_ text: String) -> Bool {
    text.wholeMatch(of: /https?:\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?/) != nil
  }

  func allows(_ origin: String?, host: String?) -> Bool {
    guard let origin else { return true }
    if allowed.contains(origin) { return true }
    guard let host, let scheme = origin.firstRange(of: "://") else { return false }
    return origin[scheme.upperBound...] == host[...]
  }
}
