public import Foundation

/// CURVE key pairs made by `broker keygen` in a directory of their own, for tests that run the
/// programs against a broker with an allow-list. The broker's pair is named `server`.
public struct CurveKeys: Sendable {
  /// Where the pairs are (`NAME.key`, `NAME.pub`).
  public let directory: URL

  /// Makes the broker's pair and one for each client name.
  public init(clients: [String]) async throws {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("curve-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    for name in ["server"] + clients {
      let made = try await runCommand(
        productsDirectory.appendingPathComponent("broker").path, ["keygen", path(name)])
      guard made.status == 0 else { throw KeygenFailed(output: made.output) }
    }
  }

  /// A file in the directory.
  public func path(_ name: String) -> String {
    directory.appendingPathComponent(name).path
  }

  /// The public key of the pair `name`, as an allow-list names it.
  public func publicKey(_ name: String) throws -> String {
    try String(contentsOfFile: path("\(name).pub"), encoding: .utf8)
      .trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// The broker's arguments: its secret key and the allow-list file `allowed.txt`.
  public var brokerArguments: [String] {
    ["--curve-secret-file", path("server.key"), "--allow-keys", path("allowed.txt")]
  }

  /// Writes the allow-list file: one line per client (a name, then its permissions, if any).
  public func allow(_ lines: [(client: String, permissions: String)]) throws {
    let text = try lines.map { "\(try publicKey($0.client)) \($0.permissions)\n" }.joined()
    try text.write(toFile: path("allowed.txt"), atomically: true, encoding: .utf8)
  }

  /// A program's arguments to connect as the client `name`.
  public func credentials(_ name: String) throws -> [String] {
    ["--curve-server-key", try publicKey("server"), "--curve-key-file", path("\(name).key")]
  }

  /// Removes the directory.
  public func remove() {
    try? FileManager.default.removeItem(at: directory)
  }
}

/// `broker keygen` failed.
public struct KeygenFailed: Error, CustomStringConvertible {
  /// What it printed.
  public let output: String
  /// A readable explanation.
  public var description: String { "broker keygen failed:\n\(output)" }
}
