import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The broker's data: the last value of every key with its version, and per key the last write
/// applied for each client (which makes resent writes idempotent).
///
/// With a data directory, every accepted write is appended to `log.jsonl` before it is
/// acknowledged or published; at start the store loads `snapshot.json`, replays the log, writes
/// a fresh snapshot and empties the log. Appends are plain writes (no fsync): they survive the
/// broker process being killed, not the machine losing power.
///
/// With a ``BrokerCluster`` (etcd), each key's entry is a record there instead, shared by every
/// broker of the cluster: a write commits the key's new entry only if the key is still at the
/// revision this store last saw, and otherwise takes the newer entry and decides again. The
/// entries here are then a cache that the cluster's changes keep fresh.
final class BrokerStore {
  struct Entry: Codable, Equatable {
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
  }

  /// A write applied to a key: the version it made, and whose write it was.
  struct Applied: Codable, Equatable {
    var version: UInt64
    var client: String
    var write: UInt64
  }

  /// How many applied writes a key remembers (at least; it trims in batches).
  static let recentWrites = RecentWriters.capacity

  enum WriteResult: Equatable {
    case applied(version: UInt64)
    /// Applied before, making `version`: a cluster's entry, taken with its update, shows it
    /// (a commit whose answer was lost, found by its retry; a resend through another broker).
    case found(version: UInt64)
    /// With the last write ids of the writers of the versions after the write's base.
    case rejected(version: UInt64, lastWrite: UInt64, value: Data, writes: [String: UInt64])
  }

  /// Where a seeded copy comes from: the broker instance it was confirmed under, and its
  /// version there. Instance ids sort in start order, so copies compare by instance, then version.
  struct SeedOrigin: Comparable, Codable {
    let instance: String
    let version: UInt64

    static func < (lhs: SeedOrigin, rhs: SeedOrigin) -> Bool {
      (lhs.instance, lhs.version) < (rhs.instance, rhs.version)
    }
  }

  private(set) var entries: [String: Entry] = [:]
  /// Keys this run has only from clients' copies (no write applied to them yet), with the copy
  /// a newer one must beat. Absent keys take any copy; a key made by an earlier run (loaded from
  /// the data) takes one newer than that run and version.
  private var seeded: [String: SeedOrigin] = [:]
  /// This broker run (or, in a cluster, the cluster's data), which makes every version it writes.
  let instance: String
  private let directory: URL?
  private var logDescriptor: Int32 = -1
  private let cluster: (any BrokerCluster)?
  /// The cluster's revision of each key's entry held here.
  private var revisions: [String: Int64] = [:]
  /// Updates of entries taken from the cluster, not yet published.
  private var clusterUpdates: [BrokerMessage] = []
  /// Keys whose last commit went unanswered, with the revision it compared: it may still be
  /// stored, so nothing is answered about them until a commit of their own state settles it.
  private var doubts: [String: Int64] = [:]

  /// A key's entry as the cluster stores it, with what an update of its version names.
  private struct ClusterRecord: Codable {
    var entry: Entry
    var client: String
    var write: UInt64
    /// For a key that has only clients' copies so far: the copy a newer one must beat.
    var adoptedFrom: SeedOrigin?
  }

  /// The cluster changed the key since this store last saw it: decide again on the new entry.
  private struct Conflict: Error {}

  /// Why a write to the cluster failed.
  enum ClusterFailure: Error, CustomStringConvertible {
    /// The cluster was known to be unreachable: nothing was sent, nothing applied.
    case unavailable
    /// The cluster stopped answering during the commit: the write may or may not be stored.
    case unknownOutcome(any Error)
    /// Other brokers changed the key every time.
    case contended

    var description: String {
      switch self {
      case .unavailable: "the shared store (etcd) is unreachable"
      case .unknownOutcome(let error): "the shared store (etcd) did not answer: \(error)"
      case .contended: "the key kept changing in the shared store"
      }
    }
  }

  /// Settles a key whose last commit went unanswered: once a transaction comparing the same
  /// revision has gone through, that commit can never apply later. If the key changed, its new
  /// entry is taken; if not, its stored record is written again unchanged, moving the revision.
  private func settle(_ key: String) throws {
    guard let cluster, let revision = doubts[key] else { return }
    do {
      let stored = try cluster.read(key: key)
      if let stored, stored.revision == revision {
        switch try cluster.commit(key: key, record: stored.data, expecting: revision) {
        case .stored(let moved): revisions[key] = moved
        case .changed(let current?): absorb(key, current)
        case .changed(nil): break
        }
      } else if let stored {
        absorb(key, stored)
      }
    } catch {
      throw ClusterFailure.unavailable
    }
    doubts[key] = nil
  }

  /// Loads every key of a cluster's shared store.
  init(cluster: any BrokerCluster) throws {
    self.cluster = cluster
    self.instance = cluster.instance
    self.directory = nil
    for (key, record) in try cluster.loadAll() { absorb(key, record) }
    clusterUpdates = []
  }

  init(directory: URL?, instance: String) throws {
    self.directory = directory
    self.instance = instance
    self.cluster = nil
    guard let directory else { return }
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try load(from: directory)
    try compact(into: directory)
    logDescriptor = open(logURL(directory).path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard logDescriptor >= 0 else { throw StorageError(operation: "open the write log") }
  }

  deinit {
    if logDescriptor >= 0 { close(logDescriptor) }
  }

  /// Every client with an exactly-once record.
  var clients: Set<String> {
    entries.values.reduce(into: []) { clients, entry in clients.formUnion(entry.lastWrites.keys) }
  }

  /// Drops the exactly-once records of `clients`. Kept in memory only: the records come back
  /// from the data at the next start, and expire again after the timeout.
  /// In a cluster the records stay: another broker may be serving the client, and the next
  /// commit of a key would store its pruned entry for every broker.
  func forget(_ clients: Set<String>) {
    guard !clients.isEmpty, cluster == nil else { return }
    for key in entries.keys {
      entries[key]!.lastWrites = entries[key]!.lastWrites.filter { !clients.contains($0.key) }
      entries[key]!.recent?.removeAll { clients.contains($0.client) }
    }
  }

  func snapshot(
    key: String, client: String
  ) -> (version: UInt64, lastWrite: UInt64, value: Data, writes: [String: UInt64]) {
    guard let entry = entries[key] else { return (0, 0, Data(), [:]) }
    return (
      entry.version, entry.lastWrites[client] ?? 0, entry.value, Self.writes(entry.recent, after: 0)
    )
  }

  /// The last write id of each client whose write made a version after `base`.
  private static func writes(_ recent: [Applied]?, after base: UInt64) -> [String: UInt64] {
    var writes: [String: UInt64] = [:]
    // Newest first, so a REJECT (a recent base) stops after a few.
    for applied in (recent ?? []).reversed() {
      guard applied.version > base else { break }
      if writes[applied.client] == nil { writes[applied.client] = applied.write }
    }
    return writes
  }

  /// Whether clients' copies may still replace the key: no write was applied to it in this run
  /// (a key this run loaded, took from a copy, or does not have).
  func awaitsCopies(_ key: String) -> Bool {
    entries.index(forKey: key) == nil || copyToBeat(key) != nil
  }

  /// What a copy of a key that may still take copies must be newer than: the newest copy this
  /// run adopted, or the earlier run and version that made the loaded value. `nil` for a key
  /// this run wrote (and for data older than protocol 2, which does not say which run made it).
  private func copyToBeat(_ key: String) -> SeedOrigin? {
    if let adopted = seeded[key] { return adopted }
    guard let entry = entries[key], let made = entry.instance, made != instance else { return nil }
    return SeedOrigin(instance: made, version: entry.version)
  }

  /// Whether the key is one this run has no value for at all.
  func lacks(_ key: String) -> Bool {
    entries.index(forKey: key) == nil
  }

  /// Adopts a client's copy of a key that this broker lost, if the key is seedable and the copy
  /// is newer than any adopted before; returns the new version then, `nil` when refused. The
  /// copy's write records (never lower than those known) come along either way, so a write
  /// that the lost broker applied is not applied again when its client resends it.
  func seed(
    client: String, key: String, origin: SeedOrigin, value: Data, writes: [String: UInt64]
  ) throws -> UInt64? {
    try settle(key)
    return try retryingConflicts { _ throws -> UInt64? in
      let current = copyToBeat(key)
      guard entries[key] == nil || current != nil else { return nil }
      var entry = entries[key] ?? Entry(version: 0, value: Data(), lastWrites: [:])
      entry.lastWrites.merge(writes, uniquingKeysWith: max)
      guard current.map({ origin > $0 }) ?? true else {
        // Not stored: the records only help while the clients that hold those writes are alive.
        entries[key] = entry
        return nil
      }
      entry.version += 1
      entry.value = value
      entry.lastClient = nil
      entry.instance = instance
      Self.remember(writes, madeVersion: entry.version, in: &entry.recent)
      if cluster != nil {
        try commit(key, ClusterRecord(entry: entry, client: client, write: 0, adoptedFrom: origin))
      } else {
        try append(
          LogRecord(
            key: key, version: entry.version, client: client, write: 0, value: value,
            instance: instance,
            writes: entry.lastWrites
          )
        )
      }
      entries[key] = entry
      seeded[key] = origin
      return entry.version
    }
  }

  /// Compare-and-set: applies the write only when `base` is the current version, the write was
  /// not applied before and, when it names the write it follows (`after`), that write made the
  /// current version.
  func write(
    client: String, write: UInt64, key: String, base: UInt64, value: Data, after: UInt64? = nil
  ) throws -> WriteResult {
    try settle(key)
    return try retryingConflicts { retried in
      // The key is looked up (hashed) once, and its entry read and changed in place: copying it
      // out and back would copy its per-client map on every write.
      let slot = entries.index(forKey: key)
      let version = slot.map { entries.values[$0].version } ?? 0
      let lastWrite = slot.flatMap { entries.values[$0].lastWrites[client] } ?? 0
      let lastClient = slot.flatMap { entries.values[$0].lastClient }
      let follows = after.map { $0 == lastWrite && lastClient == client } ?? true
      guard write > lastWrite, base == version, follows else {
        // This very write, committed by a transaction whose answer was lost and then found
        // applied by the retry: it is applied, and the writes pipelined behind it will be.
        if retried, let made = slot.flatMap({ entries.values[$0].recent })?.last(where: {
          $0.client == client && $0.write == write
        }), made.version == base + 1 {
          return .found(version: made.version)
        }
        // A cluster's entry here may lag behind: the rejection must hold for the stored one.
        if cluster != nil { try commit(key, nil) }
        let current = slot.map { entries.values[$0].value } ?? Data()
        let writes = slot.map { Self.writes(entries.values[$0].recent, after: base) } ?? [:]
        return .rejected(version: version, lastWrite: lastWrite, value: current, writes: writes)
      }
      let applied = Applied(version: version + 1, client: client, write: write)
      if cluster != nil {
        var entry = slot.map { entries.values[$0] } ?? Entry(version: 0, value: Data(), lastWrites: [:])
        Self.apply(applied, value: value, instance: instance, to: &entry)
        try commit(key, ClusterRecord(entry: entry, client: client, write: write))
        entries[key] = entry
        seeded[key] = nil
        return .applied(version: version + 1)
      }
      try append(
        LogRecord(
          key: key, version: version + 1, client: client, write: write, value: value,
          instance: instance)
      )
      if slot == nil { entries[key] = Entry(version: 0, value: Data(), lastWrites: [:]) }
      if !seeded.isEmpty { seeded[key] = nil }
      let index = slot ?? entries.index(forKey: key)!
      Self.apply(applied, value: value, instance: instance, to: &entries.values[index])
      return .applied(version: version + 1)
    }
  }

  private static func apply(
    _ applied: Applied, value: Data, instance: String, to entry: inout Entry
  ) {
    entry.version = applied.version
    entry.value = value
    entry.lastWrites[applied.client] = applied.write
    entry.lastClient = applied.client
    entry.instance = instance
    remember(CollectionOfOne(applied), in: &entry.recent)
  }

  // MARK: - The cluster

  /// The entries taken from the cluster since the last call, as updates to publish (in order).
  func takeClusterUpdates() -> [BrokerMessage] {
    guard !clusterUpdates.isEmpty else { return [] }
    defer { clusterUpdates = [] }
    return clusterUpdates
  }

  /// Takes what other brokers wrote to the cluster.
  func absorbClusterChanges() {
    guard let cluster else { return }
    for change in cluster.takeChanges() { absorb(change.key, change.record) }
  }

  /// Reads a key from the cluster before it is answered from here: a client that moved from
  /// another broker may know a newer version than the watch has brought, and the *lastWrite* it
  /// is told must be the stored one, or it would send again a write that was applied. Returns
  /// `false` when the cluster could not be read (the entry held may be stale).
  func refresh(_ key: String) -> Bool {
    guard let cluster else { return true }
    let record: BrokerClusterRecord?
    do {
      guard cluster.isAvailable else { return false }
      try settle(key)
      record = try cluster.read(key: key)
    } catch {
      return false
    }
    if let record {
      absorb(key, record)
    } else if entries[key] != nil {
      // Deleted from the store by hand.
      entries[key] = nil
      revisions[key] = nil
    }
    return true
  }

  /// Whether this store is in a cluster that cannot be reached now.
  var isUnavailable: Bool { cluster.map { !$0.isAvailable } ?? false }

  /// Takes a cluster's record of a key if it is newer than the entry held.
  private func absorb(_ key: String, _ record: BrokerClusterRecord) {
    guard record.revision > revisions[key] ?? 0,
      let decoded = try? JSONDecoder().decode(ClusterRecord.self, from: record.data)
    else { return }
    let previous = entries[key]?.version ?? 0
    entries[key] = decoded.entry
    seeded[key] = decoded.adoptedFrom
    revisions[key] = record.revision
    guard decoded.entry.version > previous else { return }
    clusterUpdates.append(
      .update(
        key: key, version: decoded.entry.version, client: decoded.client, write: decoded.write,
        value: decoded.entry.value))
  }

  /// Stores a key's new record in the cluster (or, with `nil`, checks that the entry held is the
  /// stored one); throws ``Conflict`` after taking the newer record when the key had changed.
  private func commit(_ key: String, _ record: ClusterRecord?) throws {
    guard let cluster else { return }
    guard cluster.isAvailable else { throw ClusterFailure.unavailable }
    let data = try record.map { try JSONEncoder().encode($0) }
    let result: BrokerClusterCommit
    do {
      result = try cluster.commit(key: key, record: data, expecting: revisions[key] ?? 0)
    } catch {
      if data != nil { doubts[key] = revisions[key] ?? 0 }
      throw ClusterFailure.unknownOutcome(error)
    }
    switch result {
    case .stored(let revision):
      revisions[key] = revision
    case .changed(let current?):
      absorb(key, current)
      throw Conflict()
    case .changed(nil):
      // Deleted from the store by hand: start the key over.
      entries[key] = nil
      revisions[key] = nil
      throw Conflict()
    }
  }

  /// Runs `body` again while the cluster changes the key under it, a bounded number of times;
  /// `body` learns whether it runs again.
  private func retryingConflicts<Result>(_ body: (_ retried: Bool) throws -> Result) throws -> Result {
    for attempt in 0..<64 {
      do {
        return try body(attempt > 0)
      } catch is Conflict {
        continue
      }
    }
    throw ClusterFailure.contended
  }

  /// Appends to a key's recent writes, trimming them in batches (a trim moves the array).
  private static func remember(_ applied: some Collection<Applied>, in recent: inout [Applied]?) {
    if recent == nil { recent = [] }
    recent!.append(contentsOf: applied)
    if recent!.count > 2 * recentWrites { recent!.removeFirst(recent!.count - recentWrites) }
  }

  /// Remembers a copy's write records as the writes in the version that adopting it made.
  private static func remember(
    _ writes: [String: UInt64], madeVersion version: UInt64, in recent: inout [Applied]?
  ) {
    let applied = writes.sorted { $0.key < $1.key }.map {
      Applied(version: version, client: $0.key, write: $0.value)
    }
    remember(applied, in: &recent)
  }

  // MARK: - Persistence

  private struct LogRecord: Codable {
    let key: String
    let version: UInt64
    let client: String
    let write: UInt64
    let value: Data
    /// The run that made the version (absent in logs written before protocol 2).
    var instance: String? = nil
    /// A seed's write records (its `write` is 0).
    var writes: [String: UInt64]? = nil
  }

  private func logURL(_ directory: URL) -> URL { directory.appendingPathComponent("log.jsonl") }
  private func snapshotURL(_ directory: URL) -> URL {
    directory.appendingPathComponent("snapshot.json")
  }

  private func append(_ record: LogRecord) throws {
    guard logDescriptor >= 0 else { return }
    var line = try JSONEncoder().encode(record)
    line.append(0x0A)
    let start = lseek(logDescriptor, 0, SEEK_END)
    let written = line.withUnsafeBytes { Glibc.write(logDescriptor, $0.baseAddress, $0.count) }
    guard written == line.count else {
      // A short write sets no errno: the file system ran out of room (or a file size limit).
      if written >= 0 { errno = ENOSPC }
      let error = StorageError(operation: "append to the write log")
      // Leave no half record behind: the next one would be glued to it.
      if start >= 0 { ftruncate(logDescriptor, start) }
      throw error
    }
  }

  private func load(from directory: URL) throws {
    if let data = try? Data(contentsOf: snapshotURL(directory)) {
      entries = try JSONDecoder().decode([String: Entry].self, from: data)
    }
    guard let log = try? Data(contentsOf: logURL(directory)) else { return }
    let decoder = JSONDecoder()
    for line in log.split(separator: 0x0A) {
      // A line cut short by a crash ends the usable log.
      guard let record = try? decoder.decode(LogRecord.self, from: Data(line)) else { break }
      var entry = entries[record.key] ?? Entry(version: 0, value: Data(), lastWrites: [:])
      guard record.version > entry.version else { continue }
      entry.version = record.version
      entry.value = record.value
      entry.instance = record.instance
      if let writes = record.writes {
        entry.lastWrites.merge(writes, uniquingKeysWith: max)
        entry.lastClient = nil
        Self.remember(writes, madeVersion: record.version, in: &entry.recent)
      } else {
        entry.lastWrites[record.client] = max(entry.lastWrites[record.client] ?? 0, record.write)
        entry.lastClient = record.client
        Self.remember(
          CollectionOfOne(
            Applied(version: record.version, client: record.client, write: record.write)),
          in: &entry.recent)
      }
      entries[record.key] = entry
    }
  }

  private func compact(into directory: URL) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    try encoder.encode(entries).write(to: snapshotURL(directory), options: .atomic)
    try Data().write(to: logURL(directory), options: .atomic)
  }
}

/// A failed write to the broker's data directory, with the system's reason.
struct StorageError: Error, CustomStringConvertible {
  let operation: String
  let reason: String

  init(operation: String) {
    self.operation = operation
    self.reason = String(cString: strerror(errno))
  }

  var description: String { "could not \(operation): \(reason)" }
}
