import Foundation
import Logging
import SharedBroker
import Sharing

/// `broker-benchmarks tapper ROUTER TAPS PACE_MS`: taps the `stats` key as `counter` does (its
/// `+`), TAPS times, PACE_MS apart, in a process of its own; once the last tap is confirmed it
/// prints `taps T1 T2 ...`, each tap's wall-clock time in microseconds, as the web front's
/// timed tab does.
enum Tapper {
  static func run(_ arguments: [String]) async throws {
    guard arguments.count == 3, let taps = Int(arguments[1]), let pace = UInt64(arguments[2]) else {
      throw BenchmarkError("usage: tapper ROUTER TAPS PACE_MS")
    }
    var logger = Logger(label: "tapper")
    logger.logLevel = .critical
    let client = BrokerClient(endpoint: arguments[0], logger: logger)
    defer { client.close() }
    let stats = withDependencies {
      $0.brokerClient = client
    } operation: { Shared(wrappedValue: Reader.Stats(), .broker("stats")) }
    try await client.waitUntilConnected()
    try await client.waitUntilConfirmed(keys: ["stats"])
    var stamps: [Double] = []
    for _ in 0..<taps {
      stamps.append(wallMicroseconds())
      stats.withLock {
        $0.count += 1
        $0.numberOfCounts += 1
        $0.maxCount = max($0.maxCount, $0.count)
      }
      pause(microseconds: pace * 1_000)
    }
    try await client.waitUntilConfirmed(timeout: .seconds(60))
    print("taps " + stamps.map { format($0) }.joined(separator: " "))
  }
}

/// Microseconds on CLOCK_REALTIME: the one clock a browser's page and a process share.
func wallMicroseconds() -> Double {
  var time = timespec()
  clock_gettime(CLOCK_REALTIME, &time)
  return Double(time.tv_sec) * 1e6 + Double(time.tv_nsec) / 1e3
}
