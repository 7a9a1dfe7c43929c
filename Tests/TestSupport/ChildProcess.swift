public import Foundation
internal import Subprocess
import Synchronization

#if canImport(System)
  import System
#else
  import SystemPackage
#endif

/// A program started as a child process, its standard output and error captured together.
///
/// Children are started with swift-subprocess: they inherit no descriptor but stdin, stdout and
/// stderr, and they start with every signal at its default and none blocked, even when a test in
/// this process runs a `ServiceGroup` (which ignores SIGTERM, SIGINT and SIGHUP to catch them).
public final class ChildProcess: Sendable {
  /// The child's process id.
  public let processIdentifier: Int32

  private struct State {
    var captured: [UInt8] = []
    var outputEnded = false
    /// The exit code, or the number of the signal that ended the child.
    var status: Int32?
    var wasSignaled = false
    var outputWaiters: [UUID: (text: String, from: Int, continuation: CheckedContinuation<String?, Never>)] = [:]
    var exitWaiters: [UUID: CheckedContinuation<Int32, Never>] = [:]
  }

  /// What the child printed and how it ended, shared with the task that runs it.
  private final class Record: Sendable {
    let state = Mutex(State())

    func received(_ bytes: [UInt8]) {
      let ready = state.withLock { state -> [(CheckedContinuation<String?, Never>, String?)] in
        if bytes.isEmpty {
          state.outputEnded = true
        } else {
          state.captured += bytes
        }
        var ready: [(CheckedContinuation<String?, Never>, String?)] = []
        for (id, waiter) in state.outputWaiters {
          let now = String(decoding: state.captured[waiter.from...], as: UTF8.self)
          guard now.contains(waiter.text) || state.outputEnded else { continue }
          ready.append((waiter.continuation, now.contains(waiter.text) ? now : nil))
          state.outputWaiters[id] = nil
        }
        return ready
      }
      for (continuation, output) in ready { continuation.resume(returning: output) }
    }

    func exited(with status: Int32, signaled: Bool) {
      let waiters = state.withLock { state in
        state.status = status
        state.wasSignaled = signaled
        defer { state.exitWaiters = [:] }
        return Array(state.exitWaiters.values)
      }
      for waiter in waiters { waiter.resume(returning: status) }
    }
  }

  private let record: Record

  /// Starts `name` from the products directory.
  ///
  /// - Parameters:
  ///   - name: The executable.
  ///   - arguments: Its arguments.
  ///   - environment: Extra environment variables.
  public convenience init(
    _ name: String, _ arguments: [String], environment: [String: String] = [:]
  ) async throws {
    try await self.init(
      executable: productsDirectory.appendingPathComponent(name), arguments, environment: environment
    )
  }

  /// Starts any executable, e.g. `/bin/sh` to set limits before `exec`-ing a product. Returns once
  /// the child runs.
  ///
  /// - Parameters:
  ///   - executable: The program.
  ///   - arguments: Its arguments.
  ///   - environment: Extra environment variables.
  public init(executable: URL, _ arguments: [String], environment: [String: String] = [:]) async throws {
    let record = Record()
    let overrides = Dictionary(
      uniqueKeysWithValues: environment.compactMap { name, value in
        Environment.Key(rawValue: name).map { ($0, Optional(value)) }
      })
    let (started, starting) = AsyncStream<Result<pid_t, any Error>>.makeStream()
    // Detached: the child outlives the call that starts it; the task ends when the child does.
    Task.detached {
      var status: Int32 = -1
      var wasSignaled = false
      do {
        let result = try await run(
          .path(FilePath(executable.path)),
          arguments: Arguments(arguments),
          environment: .inherit.updating(overrides),
          input: .none,
          output: .sequence,
          error: .combinedWithOutput
        ) { execution in
          starting.yield(.success(execution.processIdentifier.value))
          starting.finish()
          for try await buffer in execution.standardOutput {
            let bytes = buffer.withUnsafeBytes { Array($0) }
            record.received(bytes)
          }
        }
        switch result.terminationStatus {
        case let .exited(code): status = code
        case let .signaled(signal): (status, wasSignaled) = (signal, true)
        }
      } catch {
        starting.yield(.failure(error))
        starting.finish()
      }
      // Output first: whoever learns of the exit finds everything the child printed.
      record.received([])
      record.exited(with: status, signaled: wasSignaled)
    }
    var iterator = started.makeAsyncIterator()
    guard let outcome = await iterator.next() else { throw CancellationError() }
    processIdentifier = try outcome.get()
    self.record = record
  }

  deinit {
    signal(SIGTERM)
  }

  /// Whether the child has not exited yet.
  public var isRunning: Bool {
    record.state.withLock { $0.status == nil }
  }

  /// Whether a signal ended the child (then ``waitForExit()`` returned the signal's number).
  public var wasSignaled: Bool {
    record.state.withLock { $0.wasSignaled }
  }

  /// The child's resident memory, in KiB (0 once it has exited).
  public var residentKilobytes: Int {
    let status = (try? String(contentsOfFile: "/proc/\(processIdentifier)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
  }

  /// The CPU time the child has used so far, in clock ticks (1/100 s).
  public var cpuTicks: Int {
    let stat = (try? String(contentsOfFile: "/proc/\(processIdentifier)/stat", encoding: .utf8)) ?? ""
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    guard fields.count > 12 else { return 0 }
    return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
  }

  /// Everything printed so far (stdout and stderr).
  public var printed: String {
    record.state.withLock { String(decoding: $0.captured, as: UTF8.self) }
  }

  /// How many bytes the child has printed so far: a mark for ``waitForOutput(containing:after:)``.
  public var printedCount: Int {
    record.state.withLock { $0.captured.count }
  }

  /// Waits until the output contains `text` (or the output ends, or the test's time limit
  /// cancels the wait); returns the output then, or `nil` without it.
  ///
  /// - Parameters:
  ///   - text: What to wait for.
  ///   - mark: Look only at what was printed after this many bytes (``printedCount``).
  public func waitForOutput(containing text: String, after mark: Int = 0) async -> String? {
    let id = UUID()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        record.state.withLock { state in
          let now = String(decoding: state.captured[min(mark, state.captured.count)...], as: UTF8.self)
          if now.contains(text) || state.outputEnded || Task.isCancelled {
            continuation.resume(returning: now.contains(text) ? now : nil)
          } else {
            state.outputWaiters[id] = (text, mark, continuation)
          }
        }
      }
    } onCancel: {
      record.state.withLock { $0.outputWaiters.removeValue(forKey: id) }?.continuation.resume(returning: nil)
    }
  }

  /// Waits for the child to exit and returns its exit code, or the number of the signal that
  /// ended it. If the wait is cancelled (the test's time limit), the child is killed, so a hung
  /// child fails the test instead of hanging it.
  public func waitForExit() async -> Int32 {
    let id = UUID()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        record.state.withLock { state in
          if let status = state.status {
            continuation.resume(returning: status)
          } else {
            state.exitWaiters[id] = continuation
          }
        }
      }
    } onCancel: {
      signal(SIGKILL)
    }
  }

  /// Sends a signal (`SIGKILL`, `SIGTERM`, …) unless the child has already exited.
  public func signal(_ signal: Int32) {
    // Once the exit is known the id may soon belong to another process: no more signals.
    record.state.withLock { state in
      if state.status == nil { kill(processIdentifier, signal) }
    }
  }
}
