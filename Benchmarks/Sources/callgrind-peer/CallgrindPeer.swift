import Foundation
import Logging
import SharedBroker
import SharedBrokerServer
import Sharing
import Synchronization

/// A broker, a reader and a writer with a synchronous `main`, so that valgrind can run the
/// broker or the reader (it cannot run a program with an `async` main):
/// `callgrind-peer broker|write|read ENDPOINT COUNT`. The broker serves until COUNT writes were
/// applied (or none came for two seconds) and says how many; the reader waits until it shows
/// COUNT. See PROFILING.md.
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
    guard arguments.count == 3, let target = Int(arguments[2]) else {
      print("usage: callgrind-peer broker|write|read ENDPOINT COUNT")
      exit(2)
    }
    if arguments[0] == "broker" {
      serve(arguments[1], until: target)
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
      for count in 1...target {
        stats.withLock { $0.count = count }
        usleep(5_000)
      }
      while client.hasUnconfirmedWrites { usleep(1_000) }
    } else {
      let seen = Mutex((last: 0, calls: 0))
      let subscription = stats.publisher.sink { @Sendable value in
        seen.withLock { $0 = (value.count, $0.calls + 1) }
      }
      FileHandle.standardError.write(Data("ready\n".utf8))
      while seen.withLock({ $0.last }) < target { usleep(1_000) }
      subscription.cancel()
      FileHandle.standardError.write(Data("updates seen: \(seen.withLock { $0.calls })\n".utf8))
    }
    client.close()
  }

  static func serve(_ endpoint: String, until writes: Int) {
    var logger = Logger(label: "callgrind-peer")
    logger.logLevel = .critical
    let server = BrokerServer(configuration: BrokerConfiguration(listen: endpoint, seedWindow: .zero), logger: logger)
    do {
      try server.start()
    } catch {
      FileHandle.standardError.write(Data("cannot start the broker: \(error)\n".utf8))
      exit(1)
    }
    FileHandle.standardError.write(Data("ready\n".utf8))
    // A writer on a busy machine may fold two taps into one write, and then COUNT writes never
    // come: the broker also stops once writes stopped coming for two seconds.
    var applied = 0
    var quiet = 0
    while applied < writes, applied == 0 || quiet < 200 {
      usleep(10_000)
      let now = server.statistics.writesApplied
      quiet = now == applied ? quiet + 1 : 0
      applied = now
    }
    server.stop()
    FileHandle.standardError.write(Data("writes applied: \(applied)\n".utf8))
  }
}
