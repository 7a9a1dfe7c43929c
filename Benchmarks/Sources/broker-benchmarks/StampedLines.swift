import Foundation
import Synchronization

/// A child process whose output lines are each stamped with the wall-clock time (µs, as
/// ``wallMicroseconds()``) at which this process read them: how a terminal program's output is
/// timed as it appears.
final class StampedLines: @unchecked Sendable {
  private let process: Process
  private let lines = Mutex<[(time: Double, line: String)]>([])

  init(_ executable: String, _ arguments: [String]) throws {
    let (process, pipe) = pipedProcess(executable, arguments)
    self.process = process
    let descriptor = pipe.fileHandleForReading.fileDescriptor
    // A thread of its own, blocked in read(2): each line is stamped as soon as it arrives.
    let reader = Thread { [self] in
      var pending = Data()
      var buffer = [UInt8](repeating: 0, count: 65_536)
      while true {
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return }
        let time = wallMicroseconds()
        pending.append(contentsOf: buffer[0..<count])
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
          pending.removeSubrange(pending.startIndex...newline)
          self.lines.withLock { $0.append((time, line)) }
        }
      }
    }
    try process.run()
    reader.start()
  }

  var processIdentifier: Int32 { process.processIdentifier }

  /// The lines so far, with their times.
  var stamped: [(time: Double, line: String)] { lines.withLock { $0 } }

  /// Waits (up to `timeout` seconds) for a line that `matches`; returns its time.
  func time(
    ofFirstLine matches: (String) -> Bool, timeout: Double = 30
  ) throws -> Double {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if let found = stamped.first(where: { matches($0.line) }) { return found.time }
      usleep(2_000)
    }
    throw BenchmarkError("no such line within \(timeout) s; the last: \(stamped.last?.line ?? "none")")
  }

  func stop() {
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
  }
}
