import Foundation

/// The broker as a whole, as the page's inspector shows it: read from the Prometheus text that
/// `broker --metrics` serves, since the protocol itself tells a client only about its keys.
struct BrokerFigures: Codable, Equatable {
  /// Clients the broker remembers: they said `HELLO` and were not forgotten.
  var clients: Int
  /// Clients heard from in the last 5 seconds.
  var activeClients: Int
  /// Open connections to its ROUTER.
  var connections: Int
  /// Keys it holds.
  var keys: Int
  /// Writes applied since it started: the page charts their rate.
  var writesApplied: Int

  /// The figures in `text`, or `nil` when one is missing (not a SharedMirror broker's metrics).
  init?(prometheus text: String) {
    var samples: [Substring: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
      guard let space = line.lastIndex(of: " "),
        let value = Double(line[line.index(after: space)...]), value.isFinite
      else { continue }
      samples[line[..<space]] = value
    }
    func sample(_ name: Substring) -> Int? { samples[name].map { Int($0) } }
    guard let clients = sample("sharedmirror_broker_clients"),
      let activeClients = sample("sharedmirror_broker_active_clients"),
      let connections = sample("sharedmirror_broker_connections"),
      let keys = sample("sharedmirror_broker_keys"),
      let writesApplied = sample("sharedmirror_broker_writes_applied_total")
    else { return nil }
    self.clients = clients
    self.activeClients = activeClients
    self.connections = connections
    self.keys = keys
    self.writesApplied = writesApplied
  }
}
