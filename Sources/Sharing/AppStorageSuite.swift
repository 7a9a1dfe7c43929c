public import Dependencies
public import Foundation

/// The store behind ``AppStorageKey``: small named values in one JSON file, shared by every
/// process that opens the same file.
///
/// Foundation's `UserDefaults` on Linux keeps values in a per-process cache and offers no way to
/// hear about another process's writes (no KVO across processes, no distributed notifications),
/// so this suite is our own: each write is a locked read-modify-write of the file (`flock`), and
/// other processes' writes are observed with inotify.
public final class AppStorageSuite: Sendable {
  let url: URL
  let files: FileStorage

  /// A suite stored in `url`.
  ///
  /// - Parameters:
  ///   - url: The JSON file holding the suite.
  ///   - fileStorage: The file system to use.
  public init(url: URL, fileStorage: FileStorage = .fileSystem) {
    self.url = url
    self.files = fileStorage
  }

  /// The process-wide suite: `$SHARED_MIRROR_APP_STORAGE`, or
  /// `$XDG_CONFIG_HOME/shared-mirror/app-storage.json` (`~/.config` when unset).
  public static let standard: AppStorageSuite = {
    let environment = ProcessInfo.processInfo.environment
    if let path = environment["SHARED_MIRROR_APP_STORAGE"] {
      return AppStorageSuite(url: URL(fileURLWithPath: path))
    }
    let config = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
      ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
    return AppStorageSuite(
      url: config.appendingPathComponent("shared-mirror/app-storage.json")
    )
  }()

  /// A private suite in memory, what tests get by default.
  ///
  /// - Returns: An empty suite.
  public static func inMemory() -> AppStorageSuite {
    AppStorageSuite(url: URL(fileURLWithPath: "/app-storage.json"), fileStorage: .inMemory())
  }

  func value(forKey key: String) throws -> AppStorageValue? {
    try readAll()[key]
  }

  func set(_ value: AppStorageValue, forKey key: String) throws {
    try files.exclusively(url) {
      var values = try readAll()
      values[key] = value
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
      try files.save(encoder.encode(values), url)
    }
  }

  func observe(_ handler: @escaping @Sendable () -> Void) -> SharedSubscription {
    files.observe(url, handler)
  }

  private func readAll() throws -> [String: AppStorageValue] {
    guard let data = try files.load(url), !data.isEmpty else { return [:] }
    return try JSONDecoder().decode([String: AppStorageValue].self, from: data)
  }
}

/// One stored value, tagged with its type so a reader of another type sees a mismatch instead
/// of a silent reinterpretation.
enum AppStorageValue: Codable, Equatable, Sendable {
  case bool(Bool), int(Int), double(Double), string(String), data(Data), url(URL), date(Date)

  init?(_ value: Any) {
    switch value {
    case let value as Bool: self = .bool(value)
    case let value as Int: self = .int(value)
    case let value as Double: self = .double(value)
    case let value as String: self = .string(value)
    case let value as Data: self = .data(value)
    case let value as URL: self = .url(value)
    case let value as Date: self = .date(value)
    default: return nil
    }
  }

  var anyValue: Any {
    switch self {
    case let .bool(value): value
    case let .int(value): value
    case let .double(value): value
    case let .string(value): value
    case let .data(value): value
    case let .url(value): value
    case let .date(value): value
    }
  }
}

private enum AppStorageSuiteKey: DependencyKey {
  static var liveValue: AppStorageSuite { .standard }
  static var testValue: AppStorageSuite { .inMemory() }
}

extension DependencyValues {
  /// The suite behind every ``AppStorageKey`` (`.appStorage("name")`): the standard file live,
  /// a fresh in-memory suite in each test.
  public var defaultAppStorage: AppStorageSuite {
    get { self[AppStorageSuiteKey.self] }
    set { self[AppStorageSuiteKey.self] = newValue }
  }
}
