/// The brokers a client may talk to: the ones its cluster announced last (in `WELCOME` and
/// `BROKERS`: the live ones), then the ones it was given that the cluster did not name, and the
/// one it talks to now. A value: the ``ClientLoop`` keeps one for its sockets, the simulation
/// the same for its own, and the web front one per tab.
package struct BrokerList: Equatable, Sendable {
  /// The endpoints the client was given (`--broker a,b`), which it never forgets: the last
  /// resort when none of the announced ones answers.
  package let given: [String]
  /// The brokers the cluster announced last, starting with the broker that announced them.
  package private(set) var announced: [String] = []
  /// The endpoint the DEALER talks to.
  package private(set) var current: String
  /// The name the cluster gave the current broker (the first it announced), when the client
  /// reached it under another (a given `tcp://127.0.0.1:5555` is announced as
  /// `tcp://host:5555`): a move goes on from that name, not back to the same broker.
  private var currentAsAnnounced: String?

  /// - Parameter given: At least one endpoint.
  package init(given: [String]) {
    precondition(!given.isEmpty, "A client needs a broker.")
    self.given = given
    current = given[0]
  }

  /// Every endpoint, in the order the client tries them.
  package var all: [String] { announced + given.filter { !announced.contains($0) } }

  /// Whether there is another broker to move to.
  package var hasOthers: Bool { all.count > 1 }

  /// Takes the cluster's announcement. A broker that left is dropped, unless it was given; the
  /// current one stays current until the client moves.
  ///
  /// - Returns: Whether the list changed.
  package mutating func learn(_ announced: [String]) -> Bool {
    var seen = Set<String>()
    let announced = announced.filter { seen.insert($0).inserted }
    currentAsAnnounced = announced.first
    defer { self.announced = announced }
    return announced != self.announced
  }

  /// Moves on to the endpoint after the current one, round the list (the first one when the
  /// current one has left it).
  ///
  /// - Returns: `false`, without moving, when the client knows one broker only.
  package mutating func moveToNext() -> Bool {
    let all = all
    guard all.count > 1 else { return false }
    let position = all.firstIndex(of: currentAsAnnounced ?? current) ?? all.firstIndex(of: current)
    current = position.map { all[($0 + 1) % all.count] } ?? all[0]
    currentAsAnnounced = nil
    return true
  }
}
