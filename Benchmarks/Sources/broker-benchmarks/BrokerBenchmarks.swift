import Foundation
import Logging
import SharedBroker
import Sharing
import Synchronization
import ZeroMQ

/// Round trips on loopback, each next to a raw libzmq baseline measured in the same run:
/// - a confirmed write: `withLock` until the broker's ACK is applied;
/// - propagation: `withLock` in one client until another client's value shows it;
/// - baseline: a DEALER → ROUTER → DEALER echo of the same payload on raw sockets.
@main
enum BrokerBenchmarks {
  struct Stats: Codable, Equatable, Sendable {
    var count = 0
    var maxCount = 0
    var minCount = 0
    var numberOfCounts = 0
  }

  static let iterations = 2_000

  static func main() async throws {
    var logger = Logger(label: "bench")
    logger.logLevel = .critical
    let server = BrokerServer(
      configuration: .init(listen: "tcp://127.0.0.1:*", publish: "tcp://127.0.0.1:*"), logger: logger
    )
    let endpoints = try server.start()
    defer { server.stop() }

    let writerClient = BrokerClient(endpoint: endpoints.router, logger: logger)
    let readerClient = BrokerClient(endpoint: endpoints.router, logger: logger)
    let writer = withDependencies {
      $0.brokerClient = writerClient
    } operation: { Shared(wrappedValue: Stats(), .broker("stats")) }
    let reader = withDependencies {
      $0.brokerClient = readerClient
      $0.persistentReferences = PersistentReferences()
    } operation: { Shared(wrappedValue: Stats(), .broker("stats")) }
    try await writerClient.waitUntilConnected()
    try await readerClient.waitUntilConnected()

    var confirmed: [Double] = []
    var propagated: [Double] = []
    var values = reader.values.makeAsyncIterator()
    _ = await values.next()
    for i in 1...iterations {
      let start = ContinuousClock.now
      writer.withLock { $0.count += 1; $0.numberOfCounts += 1; $0.maxCount = max($0.maxCount, $0.count) }
      while let value = await values.next(), value.count < i {}
      propagated.append(microseconds(since: start))
      try await writerClient.waitUntilConfirmed()
      confirmed.append(microseconds(since: start))
    }
    let baseline = try rawEcho(payload: JSONEncoder().encode(writer.wrappedValue))

    print("Broker round trips on loopback, \(iterations) writes, one small JSON value (µs)")
    print("")
    print("| measure | p50 | p99 | p50 vs raw echo |")
    print("|---|---:|---:|---:|")
    let rawP50 = percentile(baseline, 0.5)
    for (name, samples) in [
      ("raw libzmq DEALER→ROUTER→DEALER echo", baseline),
      ("confirmed write (withLock → ACK applied)", confirmed),
      ("propagation (writer withLock → reader sees it)", propagated),
    ] {
      let p50 = percentile(samples, 0.5)
      print(
        "| \(name) | \(format(p50)) | \(format(percentile(samples, 0.99))) | "
          + "\(String(format: "%.1f×", p50 / rawP50)) |"
      )
    }
    writerClient.close()
    readerClient.close()
  }

  static func rawEcho(payload: Data) throws -> [Double] {
    let context = try Context()
    defer { context.terminate() }
    // The echoing ROUTER lives on its own thread, which alone touches it.
    let bound = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    let endpoint = Mutex("")
    let echo = Thread {
      defer { done.signal() }
      guard let router = try? Socket(context: context, type: .router),
        (try? router.bind("tcp://127.0.0.1:*")) != nil
      else {
        bound.signal()
        return
      }
      defer { router.close() }
      endpoint.withLock { $0 = (try? router.lastEndpoint) ?? "" }
      bound.signal()
      for _ in 0..<(iterations + 1) {
        guard let frames = try? router.receive() else { break }
        _ = try? router.send(frames)
      }
    }
    echo.start()
    bound.wait()
    let dealer = try Socket(context: context, type: .dealer)
    defer { dealer.close() }
    try dealer.connect(endpoint.withLock { $0 })
    var samples: [Double] = []
    let frames = [Data("WRITE".utf8), payload]
    _ = try dealer.send(frames)
    _ = try dealer.receive()
    for _ in 0..<iterations {
      let start = ContinuousClock.now
      try dealer.send(frames)
      _ = try dealer.receive()
      samples.append(microseconds(since: start))
    }
    done.wait()
    return samples
  }

  static func microseconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
  }

  static func percentile(_ samples: [Double], _ p: Double) -> Double {
    let sorted = samples.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
  }

  static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
