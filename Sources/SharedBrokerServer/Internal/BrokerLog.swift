import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The single broker's data directory: `snapshot.json` with every key's entry, and `log.jsonl`
/// with one line per write applied since.
///
/// At start the log is replayed onto the snapshot, a fresh snapshot is written and the log
/// emptied. Every commit is appended before it is acknowledged or published. Appends are plain
/// writes (no fsync): they survive the broker process being killed, not the machine losing
/// power. Without a directory nothing is kept, and every commit succeeds.
final class BrokerLog {
  /// One applied write (or adopted copy, whose `write` is 0 and which carries `writes`).
  struct Record: Codable {
    let key: String
    let version: UInt64
    let client: String
    let write: UInt64
    let value: Data
    /// The run that made the version (absent in logs written before protocol 2).
    var instance: String? = nil
    /// A seed's write records.
    var writes: [String: UInt64]? = nil
    /// With CURVE, the client key that owns `client`'s id (absent without CURVE, and in logs
    /// written before ids had owners): a restarted broker keeps the id its owner's.
    var owner: String? = nil
  }

  /// The entries found at start.
  private(set) var loaded: [String: BrokerEntry] = [:]
  private var descriptor: Int32 = -1
  private let encoder = JSONEncoder()

  /// Opens (creating) `directory` and loads it; `nil` keeps nothing.
  init(directory: URL?) throws {
    guard let directory else { return }
    // Foundation reports a file in the way as "File exists", which hides what is wrong with it.
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory),
      !isDirectory.boolValue
    {
      throw StorageError(
        operation: "use the data directory", reason: String(cString: strerror(ENOTDIR)))
    }
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let log = directory.appendingPathComponent("log.jsonl")
    let snapshot = directory.appendingPathComponent("snapshot.json")
    loaded = try Self.load(snapshot: snapshot, log: log)
    let sorted = JSONEncoder()
    sorted.outputFormatting = .sortedKeys
    try sorted.encode(loaded).write(to: snapshot, options: .atomic)
    try Data().write(to: log, options: .atomic)
    descriptor = open(log.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw StorageError(operation: "open the write log") }
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
  }

  /// Stores a batch of the broker machine: its records appended, or refused when they cannot be.
  func commit(_ commit: BrokerMachine.Commit) -> BrokerMachine.CommitOutcome {
    do {
      try append(commit.log)
      return .stored(revision: 0)
    } catch {
      return .refused("\(error)")
    }
  }

  /// Appends `records` in one write; on failure nothing of them stays in the log.
  private func append(_ records: [Record]) throws(StorageError) {
    guard descriptor >= 0, !records.isEmpty else { return }
    var lines = Data()
    for record in records {
      guard let line = try? encoder.encode(record) else {
        throw StorageError(operation: "encode a log record", reason: "unencodable")
      }
      lines.append(line)
      lines.append(0x0A)
    }
    let start = lseek(descriptor, 0, SEEK_END)
    let written = lines.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    guard written == lines.count else {
      // A short write sets no errno: the file system ran out of room (or a file size limit).
      if written >= 0 { errno = ENOSPC }
      let error = StorageError(operation: "append to the write log")
      // Leave no half record behind: the next one would be glued to it.
      if start >= 0 { ftruncate(descriptor, start) }
      throw error
    }
  }

  private static func load(snapshot: URL, log: URL) throws -> [String: BrokerEntry] {
    var entries: [String: BrokerEntry] = [:]
    if let data = try? Data(contentsOf: snapshot) {
      entries = try JSONDecoder().decode([String: BrokerEntry].self, from: data)
    }
    guard let lines = try? Data(contentsOf: log) else { return entries }
    let decoder = JSONDecoder()
    for line in lines.split(separator: 0x0A) {
      // A line cut short by a crash ends the usable log.
      guard let record = try? decoder.decode(Record.self, from: Data(line)) else { break }
      var entry = entries[record.key] ?? .empty
      guard record.version > entry.version else { continue }
      entry.version = record.version
      entry.value = record.value
      entry.instance = record.instance
      if let writes = record.writes {
        entry.lastWrites.merge(writes, uniquingKeysWith: max)
        entry.lastClient = nil
        entry.remember(writes, madeVersion: record.version)
      } else {
        entry.lastWrites[record.client] = max(entry.lastWrites[record.client] ?? 0, record.write)
        if let owner = record.owner {
          entry.owners = (entry.owners ?? [:]).merging([record.client: owner]) { $1 }
        }
        entry.lastClient = record.client
        entry.remember(
          CollectionOfOne(
            BrokerEntry.Applied(version: record.version, client: record.client, write: record.write)))
      }
      entries[record.key] = entry
    }
    return entries
  }
}

/// A failed write to the broker's data directory, with the system's reason.
struct StorageError: Error, CustomStringConvertible {
  let operation: String
  let reason: String

  init(operation: String, reason: String = String(cString: strerror(errno))) {
    self.operation = operation
    self.reason = reason
  }

  var description: String { "could not \(operation): \(reason)" }
}
