internal import ConcurrencyExtras
public import Dependencies
public import Foundation
import Synchronization
#if canImport(Glibc)
  import Glibc
#endif

/// The file system that ``FileStorageKey`` and ``AppStorageKey`` use: the real one, or an
/// in-memory one that tests get by default.
///
/// ```swift
/// @Test func persists() {
///   withDependencies { $0.defaultFileStorage = .fileSystem } operation: { ... }
/// }
/// ```
public struct FileStorage: Sendable {
  let id: AnyHashableSendable
  let saveInterval: Duration?
  /// Reads a file; `nil` when there is none.
  public let load: @Sendable (URL) throws -> Data?
  /// Writes a file atomically.
  public let save: @Sendable (Data, URL) throws -> Void
  let observe: @Sendable (URL, @escaping @Sendable () -> Void) -> SharedSubscription
  let exclusively: @Sendable (URL, () throws -> Void) throws -> Void

  /// The real file system: atomic writes, at most one write per second per file (the last value
  /// is flushed at exit), and changes by other processes observed with inotify.
  public static let fileSystem = FileStorage(
    id: AnyHashableSendable("fileSystem"),
    saveInterval: .seconds(1),
    load: { url in
      guard FileManager.default.fileExists(atPath: url.path) else { return nil }
      return try Data(contentsOf: url)
    },
    save: { data, url in
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true
      )
      try data.write(to: url, options: .atomic)
    },
    observe: { url, handler in FileWatcher.shared.observe(url, handler: handler) },
    exclusively: { url, body in try withFileLock(url, body) }
  )

  /// A private in-memory file system: writes are immediate and observed by every key on it.
  ///
  /// - Returns: A fresh, empty file system.
  public static func inMemory() -> FileStorage {
    let files = InMemoryFiles()
    return FileStorage(
      id: AnyHashableSendable(ObjectIdentifier(files)),
      saveInterval: nil,
      load: { files.data($0) },
      save: { files.write($0, to: $1) },
      observe: { files.observe($0, handler: $1) },
      exclusively: { _, body in try files.exclusively(body) }
    )
  }
}

/// Serialises read-modify-write cycles across processes with `flock` on a side file.
private func withFileLock(_ url: URL, _ body: () throws -> Void) throws {
  try FileManager.default.createDirectory(
    at: url.deletingLastPathComponent(), withIntermediateDirectories: true
  )
  let fd = open(url.path + ".lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
  guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [:]) }
  defer { close(fd) }
  while flock(fd, LOCK_EX) != 0 {
    guard errno == EINTR else { throw CocoaError(.fileLocking, userInfo: [:]) }
  }
  defer { flock(fd, LOCK_UN) }
  try body()
}

private final class InMemoryFiles: Sendable {
  private struct State {
    var files: [URL: Data] = [:]
    var observers: [URL: [UUID: @Sendable () -> Void]] = [:]
  }

  private let state = Mutex(State())
  private let access = NSRecursiveLock()

  func data(_ url: URL) -> Data? {
    state.withLock { $0.files[url] }
  }

  func write(_ data: Data, to url: URL) {
    let observers = state.withLock { state in
      state.files[url] = data
      return Array(state.observers[url, default: [:]].values)
    }
    for observer in observers { observer() }
  }

  func observe(_ url: URL, handler: @escaping @Sendable () -> Void) -> SharedSubscription {
    let id = UUID()
    state.withLock { $0.observers[url, default: [:]][id] = handler }
    return SharedSubscription { [self] in
      _ = state.withLock { $0.observers[url]?.removeValue(forKey: id) }
    }
  }

  func exclusively(_ body: () throws -> Void) throws {
    try access.withLock(body)
  }
}

private enum FileStorageDependencyKey: DependencyKey {
  static let liveValue = FileStorage.fileSystem
  static var testValue: FileStorage { .inMemory() }
}

extension DependencyValues {
  /// The file system behind ``SharedReaderKey/fileStorage(_:decoder:encoder:)``: the real one
  /// live, a fresh in-memory one in each test.
  public var defaultFileStorage: FileStorage {
    get { self[FileStorageDependencyKey.self] }
    set { self[FileStorageDependencyKey.self] = newValue }
  }
}
