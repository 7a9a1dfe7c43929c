import Foundation

/// What the broker holds for one key: its last value and version, and the last write applied
/// for each client (which makes resent writes idempotent).
struct BrokerEntry: Codable, Equatable {
  var version: UInt64
  var value: Data
  var lastWrites: [String: UInt64]
  /// The client whose write made `version` (absent in data written before pipelining).
  var lastClient: String?
  /// The broker run that made `version` (absent in data written before protocol 2).
  var instance: String?
  /// The last writes applied, oldest first, for the clients that take the key's state without
  /// its updates (absent in data written before protocol 3).
  var recent: [Applied]?
  /// In a cluster: when each client's last write was applied, in milliseconds since 1970 (absent
  /// in data written before records expired).
  var written: [String: Int64]?
  /// In a single broker's data, with CURVE: the client key that owns each writer's id, so that
  /// a restarted broker keeps it its owner's (a cluster shares owners in its heard records).
  var owners: [String: String]?

  /// A write applied to a key: the version it made, and whose write it was.
  struct Applied: Codable, Equatable {
    var version: UInt64
    var client: String
    var write: UInt64
  }

  /// How many applied writes a key remembers (at least; it trims in batches).
  static let recentWrites = BrokerMessage.recentWriters

  /// A key nothing was written to.
  static let empty = BrokerEntry(version: 0, value: Data(), lastWrites: [:])

  /// The last write id of each client whose write made a version after `base`.
  func writes(after base: UInt64) -> [String: UInt64] {
    var writes: [String: UInt64] = [:]
    // Newest first, so a REJECT (a recent base) stops after a few.
    for applied in (recent ?? []).reversed() {
      guard applied.version > base else { break }
      if writes[applied.client] == nil { writes[applied.client] = applied.write }
    }
    return writes
  }

  /// Makes `applied` the key's latest write, with its value.
  mutating func apply(_ applied: Applied, value: Data, instance: String) {
    version = applied.version
    self.value = value
    lastWrites[applied.client] = applied.write
    lastClient = applied.client
    self.instance = instance
    remember(CollectionOfOne(applied))
  }

  /// Appends to the recent writes, trimming them in batches (a trim moves the array).
  mutating func remember(_ applied: some Collection<Applied>) {
    if recent == nil { recent = [] }
    recent!.append(contentsOf: applied)
    if recent!.count > 2 * Self.recentWrites { recent!.removeFirst(recent!.count - Self.recentWrites) }
  }

  /// Remembers a copy's write records as the writes in the version that adopting it made.
  mutating func remember(_ writes: [String: UInt64], madeVersion version: UInt64) {
    remember(writes.sorted { $0.key < $1.key }.map {
      Applied(version: version, client: $0.key, write: $0.value)
    })
  }

  /// Stamps when clients last wrote or were heard from (`times`; a stamp never goes back, and
  /// a client recorded without one starts at `now`), and drops the records of clients whose
  /// stamp is older than `cutoff`: a cluster forgets clients that went away, so an entry stays
  /// bounded by its live writers.
  mutating func stamp(_ times: [String: Int64], forgettingBefore cutoff: Int64, now: Int64) {
    var written = self.written ?? [:]
    written.merge(times, uniquingKeysWith: max)
    for client in lastWrites.keys where written[client] == nil { written[client] = now }
    let expired = Set(written.lazy.filter { $0.value < cutoff }.map(\.key))
    if !expired.isEmpty {
      for client in expired { written[client] = nil }
      forget(expired)
    }
    self.written = written
  }

  /// Drops the records of `clients`.
  mutating func forget(_ clients: Set<String>) {
    lastWrites = lastWrites.filter { !clients.contains($0.key) }
    recent?.removeAll { clients.contains($0.client) }
    owners = owners?.filter { !clients.contains($0.key) }
  }
}

/// Where a seeded copy comes from: the broker instance it was confirmed under, and its version
/// there. Instance ids sort in start order, so copies compare by instance, then version.
struct SeedOrigin: Comparable, Codable {
  let instance: String
  let version: UInt64

  static func < (lhs: SeedOrigin, rhs: SeedOrigin) -> Bool {
    (lhs.instance, lhs.version) < (rhs.instance, rhs.version)
  }
}
