import Foundation
import Synchronization
import Logging
import SharedBroker
import Sharing
import ZeroMQ

/// The reader side of the latency and throughput runs, in a process of its own. It prints
/// `ready`, then, once it saw `count` (or timed out), the CPU time it used meanwhile
/// (`cpu µs`) and one `count timestamp` line per update.
enum Reader {
  @JSONCodable
  struct Stats: Codable, Equatable, Sendable {
    var count = 0
    var maxCount = 0
    var minCount = 0
    var numberOfCounts = 0
  }

  static func run(_ arguments: [String]) async throws {
    let mode = arguments[0]
    let endpoint = arguments[1]
    let target = Int(arguments[2]) ?? 0
    var samples: [(Int, UInt64)] = []
    samples.reserveCapacity(target + 1)
    var cpuAtReady = 0.0
    var cpuUsed = 0.0
    if mode == "mirror" {
      var logger = Logger(label: "reader")
      logger.logLevel = .critical
      let client = BrokerClient(endpoint: endpoint, logger: logger)
      let stats = withDependencies {
        $0.brokerClient = client
      } operation: { Shared(wrappedValue: Stats(), .broker("bench")) }
      try await client.waitUntilConnected()
      // Observe through `publisher`, which fires on the thread that applied the update: what a
      // store's observer hears about, before any hop to another executor.
      let recorded = Mutex<[(Int, UInt64)]>([])
      let done = DispatchSemaphore(value: 0)
      let subscription = stats.publisher.sink { value in
        let finished = recorded.withLock { samples in
          samples.append((value.count, now()))
          return value.count >= target
        }
        if finished { done.signal() }
      }
      cpuAtReady = cpuMicroseconds()
      say("ready")
      done.wait()
      cpuUsed = cpuMicroseconds() - cpuAtReady
      subscription.cancel()
      samples = recorded.withLock { $0 }
      client.close()
    } else {
      let context = try Context()
      let subscriber = try Socket(context: context, type: .sub)
      try subscriber.set(.receiveHighWaterMark, 1_000_000)
      try subscriber.set(.subscribe, Array("bench".utf8))
      try subscriber.set(.receiveTimeout, 10_000)
      try subscriber.connect(endpoint)
      var announced = false
      let decoder = Runs.Mode(rawValue: mode)?.isCodable == true ? JSONDecoder() : nil
      while let frames = try subscriber.receive() {
        let count =
          try decoder.map { try $0.decode(Stats.self, from: frames[2]).count }
          ?? Int(String(decoding: frames[1], as: UTF8.self)) ?? 0
        if count == 0 {
          if !announced {
            cpuAtReady = cpuMicroseconds()
            say("ready")
            announced = true
          }
          continue
        }
        samples.append((count, now()))
        if count >= target { break }
      }
      cpuUsed = cpuMicroseconds() - cpuAtReady
      subscriber.close()
      context.terminate()
    }
    var output = "cpu \(cpuUsed)\nsamples\n"
    for (count, time) in samples { output += "\(count) \(time)\n" }
    FileHandle.standardOutput.write(Data(output.utf8))
  }

  /// Writes a line at once (stdout is a pipe, so `print` would buffer it).
  static func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
  }

  /// The CPU time (µs) a reader reported.
  static func cpu(in output: String) -> Double {
    let line = output.split(separator: "\n").first { $0.hasPrefix("cpu ") }
    return line.flatMap { Double($0.dropFirst(4)) } ?? 0
  }

  /// Parses a reader's output into `count → timestamp`.
  static func samples(in output: String) -> [(count: Int, time: UInt64)] {
    guard let start = output.range(of: "samples\n") else { return [] }
    return output[start.upperBound...].split(separator: "\n").compactMap { line in
      let parts = line.split(separator: " ")
      guard parts.count == 2, let count = Int(parts[0]), let time = UInt64(parts[1]) else { return nil }
      return (count, time)
    }
  }
}
