import Foundation

/// The clients the broker has heard from and when, so it can forget the dead ones.
///
/// A client is known by the id it says `HELLO` with, on the connection (ROUTER identity) it said
/// it on; every later request on that connection counts as the client's, `PING` included. A
/// client that stays silent for longer than the timeout is expired: the broker drops its
/// exactly-once records and its connection identity. Live clients ping every heartbeat, so only
/// dead ones (or ones cut off for longer than the timeout) expire.
struct ClientSessions {
  private struct Session {
    var lastHeard: Duration
    var peer: Data?
    /// The CURVE key that first said `HELLO` with the client's id: the id is its key's alone.
    var owner: String?
  }

  /// How long a client may stay silent.
  let timeout: Duration
  private var sessions: [String: Session] = [:]
  private var clientOfPeer: [Data: String] = [:]
  private var nextSweep: Duration = .zero
  /// The connection heard from last: a run of requests on one connection (a writer's stream)
  /// compares its identity instead of hashing it and the client id on each request. Its time
  /// goes into `sessions` when another connection speaks, and before a sweep.
  private var latest: (peer: Data, client: String, heard: Duration)?

  init(timeout: Duration) {
    self.timeout = timeout
  }

  /// The clients known now.
  var count: Int { sessions.count }

  /// The clients heard from since `time`.
  func heard(since time: Duration) -> Int {
    sessions.reduce(0) { count, session in
      let heard = latest?.client == session.key ? latest!.heard : session.value.lastHeard
      return heard >= time ? count + 1 : count
    }
  }

  /// Records a `HELLO` from `client` over the connection `peer`, whose CURVE key is `owner`
  /// (`nil` without CURVE); the client's first key stays its owner.
  mutating func heard(from client: String, peer: Data, owner: String?, at now: Duration) {
    settleLatest()
    let previous = sessions.updateValue(
      Session(lastHeard: now, peer: peer, owner: sessions[client]?.owner ?? owner), forKey: client)
    if let old = previous?.peer, old != peer, clientOfPeer[old] == client {
      clientOfPeer[old] = nil
    }
    if previous?.peer != peer { clientOfPeer[peer] = client }
  }

  /// Records any other request, by its connection, and returns the client that said `HELLO`
  /// on it; one that never did (or whose client was forgotten) counts for nobody.
  @discardableResult
  mutating func heard(fromPeer peer: Data, at now: Duration) -> String? {
    if latest?.peer == peer {
      latest!.heard = now
      return latest!.client
    }
    settleLatest()
    guard let client = clientOfPeer[peer] else { return nil }
    sessions[client]?.lastHeard = now
    latest = (peer, client, now)
    return client
  }

  /// Writes the latest connection's time back into its session, and forgets the shortcut.
  private mutating func settleLatest() {
    guard let latest else { return }
    sessions[latest.client]?.lastHeard = latest.heard
    self.latest = nil
  }

  /// The CURVE key `client`'s id belongs to, if it is known and said `HELLO` with one.
  func owner(of client: String) -> String? { sessions[client]?.owner }

  /// The CURVE key of every known client that said `HELLO` with one.
  func owners() -> [String: String] { sessions.compactMapValues(\.owner) }

  /// When `client` was last heard from, if it is known.
  func lastHeard(_ client: String) -> Duration? {
    if let latest, latest.client == client { return latest.heard }
    return sessions[client]?.lastHeard
  }

  /// Every known client and when it was last heard from.
  mutating func lastHeard() -> [String: Duration] {
    settleLatest()
    return sessions.mapValues(\.lastHeard)
  }

  /// Starts the clock for clients known only from stored data (after a restart), each id owned
  /// by the key the data names, if any.
  mutating func adopt(_ clients: Set<String>, owners: [String: String], at now: Duration) {
    for client in clients where sessions[client] == nil {
      sessions[client] = Session(lastHeard: now, peer: nil, owner: owners[client])
    }
  }

  /// Removes and returns the clients silent for longer than the timeout. Sweeps at most once a
  /// quarter of the timeout, so calling it on every request stays cheap.
  mutating func expire(at now: Duration) -> Set<String> {
    guard now >= nextSweep else { return [] }
    nextSweep = now + timeout / 4
    settleLatest()
    let expired = Set(sessions.filter { now - $0.value.lastHeard > timeout }.keys)
    for client in expired {
      // The connection may speak for another client since (it said HELLO again as that one).
      if let peer = sessions.removeValue(forKey: client)?.peer, clientOfPeer[peer] == client {
        clientOfPeer[peer] = nil
      }
    }
    return expired
  }
}
