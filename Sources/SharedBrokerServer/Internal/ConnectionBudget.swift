/// How many connections the broker takes in, within its open-file limit. libzmq accepts every
/// connection itself; once the process runs out of descriptors its listener retries `accept` in a
/// busy loop. So the broker never lets it get there: a connection accepted past the budget (as
/// the socket monitors report it) is shut down at once, while the clients already in keep
/// working. (The monitor names no connection once its handshake is done, so the refusal comes
/// during it: the client sees what a broker requiring CURVE does, and says both.)
///
/// A value that takes the monitors' events and says what to do; the broker thread shuts the
/// connections down and writes the log lines.
struct ConnectionBudget {
  /// The socket a connection was accepted on.
  enum Listener {
    case router
    case publisher
  }

  /// What to do with a connection just accepted.
  enum Decision: Equatable {
    case keep
    /// Shut it down; `log` for the first refusal of an interval (one log line at most per
    /// interval, however many are refused).
    case refuse(log: Bool)
  }

  /// Clients the broker can hold: one DEALER and one SUB connection each.
  let clients: Int
  /// How long one log line of refusals stands for.
  let logInterval: Duration
  private var open: [Listener: Set<UInt32>] = [.router: [], .publisher: []]
  private var refusing: Set<UInt32> = []
  private var lastLog: Duration?
  /// Connections refused since the start.
  private(set) var refused = 0
  /// Connections refused since the last log line.
  private(set) var refusedSinceLog = 0

  init(clients: Int, logInterval: Duration = .seconds(10)) {
    self.clients = clients
    self.logInterval = logInterval
  }

  /// Connections kept open on `listener`.
  func kept(_ listener: Listener) -> Int { open[listener]!.subtracting(refusing).count }

  /// The descriptors of the connections open on `listener`.
  func open(on listener: Listener) -> Set<UInt32> { open[listener]! }

  /// A connection (its descriptor) was accepted on `listener` at `now`.
  mutating func accepted(_ descriptor: UInt32, on listener: Listener, at now: Duration)
    -> Decision
  {
    let full = kept(listener) >= clients
    open[listener]!.insert(descriptor)
    guard full else { return .keep }
    refusing.insert(descriptor)
    refused += 1
    refusedSinceLog += 1
    guard lastLog.map({ now - $0 >= logInterval }) ?? true else { return .refuse(log: false) }
    lastLog = now
    return .refuse(log: true)
  }

  /// The refusals a log line just reported.
  mutating func logged() { refusedSinceLog = 0 }

  /// A connection (its descriptor) closed on `listener`.
  mutating func disconnected(_ descriptor: UInt32, on listener: Listener) {
    open[listener]!.remove(descriptor)
    refusing.remove(descriptor)
  }

  /// How many clients fit in `limit` open files when `inUse` are open already: each takes two
  /// connections, and `reserve` are kept for the rest of the process (a cluster's connections
  /// to etcd, the metrics endpoint, files, libzmq's own descriptors).
  static func clients(openFileLimit limit: Int, inUse: Int, reserve: Int = 64) -> Int {
    max(1, (limit - inUse - reserve) / 2)
  }
}
