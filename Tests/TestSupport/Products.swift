public import Foundation
import SharedBrokerTesting

/// The directory holding the built executables, next to the test bundle.
public var productsDirectory: URL {
  let candidates = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
  return candidates.first {
    FileManager.default.fileExists(atPath: $0.appendingPathComponent("broker").path)
  } ?? Bundle.main.bundleURL
}

/// A file of this repository, such as `Scripts/protocol_client.py`.
///
/// - Parameter path: The path from the repository's root.
/// - Returns: Its URL.
public func repositoryFile(_ path: String) -> URL {
  URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(path)
}

/// Starts the `broker` executable on free loopback ports and waits until it listens.
///
/// The ports lie below the ephemeral range (``RestartableEndpoints``), so a test can kill the
/// broker and start it again on the same endpoints.
///
/// Its seed window is 0 unless `arguments` set one: a broker just started has lost nothing that
/// a test's clients hold, and the default window would hold the first writes back 3 seconds.
///
/// - Parameter arguments: Extra arguments (e.g. `--data DIR`).
/// - Returns: The process and its ROUTER and PUB endpoints.
public func startBroker(
  _ arguments: [String] = []
) async throws -> (process: ChildProcess, router: String, publisher: String) {
  try await RestartableEndpoints.bind { endpoints in
    let broker = try await ChildProcess(
      "broker",
      ["--listen", endpoints.router, "--publish", endpoints.publisher]
        + (arguments.contains("--seed-window") ? [] : ["--seed-window", "0"]) + arguments
    )
    guard await broker.waitForOutput(containing: "Broker listening") != nil else {
      broker.signal(SIGKILL)  // when the wait was cancelled rather than the broker ended
      _ = await broker.waitForExit()
      throw BrokerDidNotStart(output: broker.printed)
    }
    return (broker, endpoints.router, endpoints.publisher)
  }
}

/// The broker executable exited before listening.
public struct BrokerDidNotStart: Error, CustomStringConvertible {
  /// What it printed.
  public let output: String
  /// A readable explanation.
  public var description: String { "the broker did not start:\n\(output)" }
}

/// Runs a command to completion and returns its exit status and combined output.
///
/// - Parameters:
///   - executable: The program's path.
///   - arguments: Its arguments.
///   - timeout: How long it may run before it is killed (a hung tool fails its test, not CI).
/// - Returns: The exit status (128 + the signal if a signal ended it) and everything printed.
@discardableResult
public func runCommand(
  _ executable: String, _ arguments: [String], timeout: Duration = .seconds(600)
) async throws -> (status: Int32, output: String) {
  let child = try await ChildProcess(executable: URL(fileURLWithPath: executable), arguments)
  let killer = Task {
    try await Task.sleep(for: timeout)
    child.signal(SIGKILL)
  }
  defer { killer.cancel() }
  let status = await child.waitForExit()
  return (child.wasSignaled ? 128 + status : status, child.printed)
}
