internal import CSpawn
public import Foundation

/// The directory holding the built executables, next to the test bundle.
public var productsDirectory: URL {
  let candidates = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
  return candidates.first {
    FileManager.default.fileExists(atPath: $0.appendingPathComponent("broker").path)
  } ?? Bundle.main.bundleURL
}

/// A built executable of this package, started as a child process with its output captured.
public final class ChildProcess: @unchecked Sendable {
  /// The process.
  public let process = Process()
  private let output = Pipe()
  private let lock = NSLock()
  private var captured = Data()
  private var waiters: [UUID: (text: String, continuation: CheckedContinuation<String?, Never>)] = [:]

  /// Starts `name` from the products directory.
  ///
  /// - Parameters:
  ///   - name: The executable.
  ///   - arguments: Its arguments.
  ///   - environment: Extra environment variables.
  public convenience init(
    _ name: String, _ arguments: [String], environment: [String: String] = [:]
  ) throws {
    try self.init(
      executable: productsDirectory.appendingPathComponent(name), arguments, environment: environment
    )
  }

  /// Starts any executable, e.g. `/bin/sh` to set limits before `exec`-ing a product.
  ///
  /// - Parameters:
  ///   - executable: The program.
  ///   - arguments: Its arguments.
  ///   - environment: Extra environment variables.
  public init(executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
    process.executableURL = executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    process.standardOutput = output
    process.standardError = output
    output.fileHandleForReading.readabilityHandler = { [weak self] handle in
      self?.append(handle.availableData)
    }
    try process.run()
  }

  deinit {
    if process.isRunning { process.terminate() }
  }

  /// Everything printed so far (stdout and stderr).
  public var printed: String {
    lock.withLock { String(decoding: captured, as: UTF8.self) }
  }

  /// Waits until the output contains `text` (or the process ends, or the test's time limit
  /// cancels the wait); returns the output then, or `nil` without it.
  public func waitForOutput(containing text: String) async -> String? {
    let id = UUID()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        lock.withLock {
          let now = String(decoding: captured, as: UTF8.self)
          if now.contains(text) || !process.isRunning || Task.isCancelled {
            continuation.resume(returning: now.contains(text) ? now : nil)
          } else {
            waiters[id] = (text, continuation)
          }
        }
      }
    } onCancel: {
      lock.withLock { waiters.removeValue(forKey: id) }?.continuation.resume(returning: nil)
    }
  }

  /// Waits for the process to exit and returns its status. If the wait is cancelled (the test's
  /// time limit), the process is killed, so a hung child fails the test instead of hanging it.
  public func waitForExit() async -> Int32 {
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        DispatchQueue.global().async { [process] in
          process.waitUntilExit()
          continuation.resume(returning: process.terminationStatus)
        }
      }
    } onCancel: {
      signal(SIGKILL)
    }
  }

  /// Sends a signal (`SIGKILL`, `SIGTERM`, …).
  public func signal(_ signal: Int32) {
    kill(process.processIdentifier, signal)
  }

  private func append(_ data: Data) {
    lock.withLock {
      if data.isEmpty {
        // End of output: nobody else will be satisfied.
        for waiter in waiters.values { waiter.continuation.resume(returning: nil) }
        waiters = [:]
        return
      }
      captured.append(data)
      let now = String(decoding: captured, as: UTF8.self)
      for (id, waiter) in waiters where now.contains(waiter.text) {
        waiter.continuation.resume(returning: now)
        waiters[id] = nil
      }
    }
  }
}

/// Starts the `broker` executable on free loopback ports and waits until it listens.
///
/// - Parameter arguments: Extra arguments (e.g. `--data DIR`).
/// - Returns: The process and its ROUTER and PUB endpoints.
public func startBroker(
  _ arguments: [String] = []
) async throws -> (process: ChildProcess, router: String, publisher: String) {
  let broker = try ChildProcess(
    "broker",
    ["--listen", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*"] + arguments
  )
  guard let output = await broker.waitForOutput(containing: "Broker listening"),
    let line = output.split(separator: "\n").first(where: { $0.contains("Broker listening") })
  else {
    throw BrokerDidNotStart(output: broker.printed)
  }
  func field(_ name: String) -> String {
    line.split(separator: " ").first { $0.hasPrefix("\(name)=") }.map {
      String($0.dropFirst(name.count + 1))
    } ?? ""
  }
  return (broker, field("router"), field("publisher"))
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
/// This spawns with `posix_spawn` instead of Foundation's `Process`, because `Process` learns that
/// a child ended when a socket it hands to the child closes: a child that starts a daemon (as the
/// first `tmux` call starts the tmux server) passes that socket on, and `waitUntilExit()` then
/// never returns. Here the child gets only stdin (`/dev/null`), stdout and stderr, and the exit is
/// taken from `waitpid`.
///
/// - Parameters:
///   - executable: The program's path.
///   - arguments: Its arguments.
///   - timeout: How long it may run before it is killed (a hung tool fails its test, not CI).
/// - Returns: The exit status (128 + the signal if a signal ended it) and everything printed.
@discardableResult
public func runCommand(
  _ executable: String, _ arguments: [String], timeout: DispatchTimeInterval = .seconds(600)
) throws -> (status: Int32, output: String) {
  var pipeEnds: [Int32] = [-1, -1]
  guard pipe2(&pipeEnds, O_CLOEXEC) == 0 else { throw POSIXError.current }
  let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
  defer { close(readEnd) }

  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_adddup2(&actions, writeEnd, STDOUT_FILENO)
  posix_spawn_file_actions_adddup2(&actions, writeEnd, STDERR_FILENO)
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1)

  let argv = ([executable] + arguments).map { strdup($0) } + [nil]
  defer { argv.forEach { free($0) } }
  // Tests in this process may run a ServiceGroup, which sets SIGTERM, SIGINT and SIGHUP to be
  // ignored so that it can catch them itself, and ignored signals are inherited: a child (tmux's
  // server, which stops itself with SIGTERM) would then outlive its test. Children start with
  // those signals at their defaults and nothing blocked.
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var defaults = sigset_t()
  sigemptyset(&defaults)
  for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
  var unblocked = sigset_t()
  sigemptyset(&unblocked)
  posix_spawnattr_setsigdefault(&attributes, &defaults)
  posix_spawnattr_setsigmask(&attributes, &unblocked)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

  var pid: pid_t = 0
  let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
  close(writeEnd)
  guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
  let killer = DispatchWorkItem { kill(pid, SIGKILL) }
  DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
  defer { killer.cancel() }

  var output = [UInt8]()
  var buffer = [UInt8](repeating: 0, count: 65_536)
  while true {
    let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
    if count > 0 {
      output.append(contentsOf: buffer[..<count])
    } else if count == 0 || errno != EINTR {
      break
    }
  }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) == -1 {
    guard errno == EINTR else { throw POSIXError.current }
  }
  let signal = status & 0x7f
  return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, String(decoding: output, as: UTF8.self))
}

extension POSIXError {
  /// The error `errno` holds now.
  static var current: POSIXError { POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL) }
}
