import Foundation
import Logging
import SharedBroker
import SharedBrokerServer
import Sharing
import Synchronization

/// A broker, a reader and a writer with a synchronous `main`, so that valgrind can run the
/// broker or the reader (it cannot run a program with an `async` main):
/// `callgrind-peer broker|write|read ENDPOINT WARMUP COUNT GO`. The writer makes WARMUP writes
/// and says `warm` once they are confirmed; the reader says `warm` once it shows WARMUP. The
/// script then zeroes the profiled peer's counters, so that its start-up (first uses of types
/// and conformances, connecting) is not counted, and creates the file GO. The broker and the
/// reader take note of what they counted so far, and the writer makes COUNT more writes once
/// both did. The broker and the reader then say what they counted since: the writes applied
/// (the broker stops when WARMUP + COUNT were, or none came for two seconds) and the
/// notifications. See PROFILING.md.
@main
enum CallgrindPeer {
  @JSONCodable
  struct Stats: Codable, Equatable, Sendable {
    var count = 0
    var maxCount = 0
    var minCount = 0
    var numberOfCounts = 0
  }

  static func main() {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard arguments.count == 5, let warmup = Int(arguments[2]), warmup >= 0,
      let count = Int(arguments[3]), count > 0
    else {
      print("usage: callgrind-peer broker|write|read ENDPOINT WARMUP COUNT GO")
      exit(2)
    }
    let go = Go(path: arguments[4])
    let target = warmup + count
    if arguments[0] == "broker" {
      serve(arguments[1], until: target, go: go)
      return
    }
    var logger = Logger(label: "callgrind-peer")
    logger.logLevel = .critical
    let client = BrokerClient(endpoint: arguments[1], logger: logger)
    let stats = withDependencies {
      $0.brokerClient = client
    } operation: {
      Shared(wrappedValue: Stats(), .broker("bench"))
    }
    while client.connectionState != .connected { usleep(1_000) }
    if arguments[0] == "write" {
      func write(_ counts: Range<Int>) {
        for count in counts {
          stats.withLock { $0.count = count }
          usleep(5_000)
        }
        while client.hasUnconfirmedWrites { usleep(1_000) }
      }
      write(1..<warmup + 1)
      say("warm")
      go.wait(for: "broker")
      go.wait(for: "reader")
      write(warmup + 1..<target + 1)
    } else {
      let seen = Mutex((last: 0, calls: 0))
      let subscription = stats.publisher.sink { @Sendable value in
        seen.withLock { $0 = (value.count, $0.calls + 1) }
      }
      say("ready")
      while seen.withLock({ $0.last }) < warmup { usleep(1_000) }
      say("warm")
      go.wait()
      let before = seen.withLock { $0.calls }
      go.counting("reader")
      while seen.withLock({ $0.last }) < target { usleep(1_000) }
      subscription.cancel()
      say("updates seen: \(seen.withLock { $0.calls } - before)")
    }
    client.close()
  }

  static func serve(_ endpoint: String, until writes: Int, go: Go) {
    var logger = Logger(label: "callgrind-peer")
    logger.logLevel = .critical
    let server = BrokerServer(configuration: BrokerConfiguration(listen: endpoint, seedWindow: .zero), logger: logger)
    do {
      try server.start()
    } catch {
      say("cannot start the broker: \(error)")
      exit(1)
    }
    say("ready")
    go.wait()
    let before = server.statistics.writesApplied
    go.counting("broker")
    // A writer on a busy machine may fold two taps into one write, and then all the writes
    // never come: the broker also stops once writes stopped coming for two seconds.
    var applied = before
    var quiet = 0
    while applied < writes, quiet < 200 {
      usleep(10_000)
      let now = server.statistics.writesApplied
      quiet = now == applied ? quiet + 1 : 0
      applied = now
    }
    server.stop()
    say("writes applied: \(applied - before)")
  }

  private static func say(_ line: String) {
    FileHandle.standardError.write(Data("\(line)\n".utf8))
  }

  /// The script's signal that the profiled peer's counters were zeroed, a file it creates,
  /// and the broker's and the reader's that they took note of their counts (GO.broker,
  /// GO.reader), which the writer waits for.
  struct Go {
    let path: String

    func wait(for role: String? = nil) {
      let path = role.map { "\(self.path).\($0)" } ?? self.path
      while !FileManager.default.fileExists(atPath: path) { usleep(1_000) }
    }

    func counting(_ role: String) {
      FileManager.default.createFile(atPath: "\(path).\(role)", contents: nil)
    }
  }
}
