import Etcd
import Foundation
import SharedBroker
import SharedBrokerCluster
import Synchronization
import ZeroMQ

/// The runs of a cluster on etcd: pipelined writers through a broker beside etcd's own
/// compare-and-set rate at the same concurrency, heartbeats while transactions wait, a leader
/// killed under load, and a key written by thousands of short-lived clients.
extension Runs {
  /// What a run of writers through a broker did.
  struct WriterRun {
    /// Confirmed writes per second.
    var rate: Double
    /// Microseconds from each write to its answer (window-1 runs: a sequential write's latency).
    var latencies: [Double]
    /// PING round trips, in ms, measured meanwhile on a connection of its own.
    var pings: [Double]
    /// PINGs answered `unavailable`: each would have moved a client to another broker.
    var unavailable: Int
    /// Writes acknowledged, and the versions the keys ended at (each applied write adds one).
    var acknowledged: Int
    var versions: Int
    /// Writes refused with an error, by its code (`storage`: not applied).
    var refusals: [String: Int]
    /// The longest time no writer got an `ACK` (ms).
    var longestPause: Double
  }

  /// Writers that each keep `window` writes in flight on their key, as the client does (each on
  /// the version the one before makes, naming it as the write it follows); after a REJECT a
  /// writer waits for the rest of its chain's answers and starts again on the version it was
  /// told. `during` runs once the writers are going (a fault).
  func pipelinedWrites(
    broker: BrokerProcess, writers: Int, keys: Int, window: Int, seconds: Double, tag: String,
    during: (() throws -> Void)? = nil
  ) throws -> WriterRun {
    let context = try Context()
    defer { context.terminate() }
    let results = Mutex<[WriterResult]>([])
    let failures = Mutex<[String]>([])
    let start = now()
    let deadline = start + UInt64(seconds * 1e9)
    let keyNames = (0..<keys).map { "\(tag)-\($0)" }
    let router = broker.router
    var threads: [Thread] = []
    let done = DispatchGroup()
    for index in 0..<writers {
      done.enter()
      let thread = Thread { [self] in
        defer { done.leave() }
        do {
          let run = try writer(
            router: router, context: context, client: "\(tag)-writer-\(index)",
            key: keyNames[index % keys], window: window, until: deadline)
          results.withLock { $0.append(run) }
        } catch {
          failures.withLock { $0.append("\(error)") }
        }
      }
      threads.append(thread)
      thread.start()
    }
    let pings = Mutex<[Double]>([])
    let unavailable = Atomic<Int>(0)
    let pinging = Atomic<Bool>(true)
    done.enter()
    Thread {
      defer { done.leave() }
      guard let probe = try? Socket(context: context, type: .dealer) else { return }
      defer { probe.close() }
      try? probe.set(.receiveTimeout, 10_000)
      try? probe.connect(router)
      while pinging.load(ordering: .relaxed) {
        let sent = now()
        guard (try? probe.send(BrokerMessage.ping(versions: []).frames)) != nil,
          let reply = try? probe.receive()
        else { return }
        pings.withLock { $0.append(Double(now() - sent) / 1e6) }
        if case .error(.unavailable, _, _, _)? = try? BrokerMessage(frames: reply) {
          unavailable.add(1, ordering: .relaxed)
        }
        pause(microseconds: 20_000)
      }
    }.start()
    try during?()
    while now() < deadline { pause(microseconds: 10_000) }
    pinging.store(false, ordering: .relaxed)
    done.wait()
    if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
    let elapsed = Double(now() - start) / 1e9
    let all = results.withLock { $0 }
    let acknowledged = all.map(\.acks).reduce(0, +)
    var versions = 0
    for key in keyNames { versions += Int(try broker.version(of: key)) }
    let confirmations = ([start] + all.flatMap(\.ackTimes)).sorted()
    let longestPause = zip(confirmations, confirmations.dropFirst()).map { $1 - $0 }.max() ?? 0
    return WriterRun(
      rate: Double(acknowledged) / elapsed, latencies: all.flatMap(\.latencies),
      pings: pings.withLock { $0 }, unavailable: unavailable.load(ordering: .relaxed),
      acknowledged: acknowledged, versions: versions,
      refusals: all.map(\.refusals).reduce(into: [:]) { $0.merge($1, uniquingKeysWith: +) },
      longestPause: Double(longestPause) / 1e6)
  }

  /// What one writer saw.
  struct WriterResult {
    var acks = 0
    /// Microseconds from each write to its `ACK`.
    var latencies: [Double] = []
    /// When each `ACK` came (ns, CLOCK_MONOTONIC).
    var ackTimes: [UInt64] = []
    var refusals: [String: Int] = [:]
  }

  private func writer(
    router: String, context: Context, client: String, key: String, window: Int,
    until deadline: UInt64
  ) throws -> WriterResult {
    let dealer = try Socket(context: context, type: .dealer)
    defer { dealer.close() }
    try dealer.set(.receiveTimeout, 30_000)
    try dealer.connect(router)
    try dealer.send(BrokerMessage.hello(client: client).frames)
    _ = try dealer.receive()
    func answer() throws -> BrokerMessage {
      guard let frames = try dealer.receive() else {
        throw BenchmarkError("\(client): no answer within 30 s")
      }
      return try BrokerMessage(frames: frames)
    }
    var confirmed: UInt64 = 0
    // A broker just started may not reach etcd yet ("ask again"): a bounded number of tries.
    for attempt in 1...100 {
      try dealer.send(BrokerMessage.get(client: client, key: key).frames)
      let reply = try answer()
      if case .snapshot(_, let version, _, _, _) = reply {
        confirmed = version
        break
      }
      guard attempt < 100 else { throw BenchmarkError("\(client): the GET was answered \(reply)") }
      if case .error(let code, _, _, _) = reply, code == .unavailable || code == .helloFirst {
        try dealer.send(BrokerMessage.hello(client: client).frames)
        _ = try answer()
      }
      pause(microseconds: 50_000)
    }
    var inFlight: [(id: UInt64, sent: UInt64)] = []
    var next: UInt64 = 1
    var draining = false
    var result = WriterResult()
    while now() < deadline || !inFlight.isEmpty {
      while !draining, now() < deadline, inFlight.count < window {
        try dealer.send(
          BrokerMessage.write(
            client: client, write: next, key: key, base: confirmed + UInt64(inFlight.count),
            value: Self.payload(Int(next)), after: inFlight.last?.id
          ).frames)
        inFlight.append((next, now()))
        next += 1
      }
      let reply = try answer()
      guard let index = inFlight.firstIndex(where: { $0.id == reply.writeID }) else { continue }
      let sent = inFlight.remove(at: index).sent
      switch reply {
      case .ack(_, _, let version):
        let time = now()
        confirmed = max(confirmed, version)
        result.acks += 1
        result.latencies.append(Double(time - sent) / 1e3)
        result.ackTimes.append(time)
      case .reject(_, _, let version, _, _, _):
        confirmed = version
        draining = true
      case .error(let code, _, _, _):
        // Refused (etcd unreachable for a moment): not applied; start the chain again.
        result.refusals[code.rawValue, default: 0] += 1
        draining = true
      default:
        draining = true
      }
      if inFlight.isEmpty { draining = false }
    }
    return result
  }

  /// etcd's own rate for the same transactions from a plain HTTP client: `writers` tasks, each
  /// on its key, comparing the key's revision and putting a value, reading the key on a
  /// conflict, one transaction at a time; returns transactions applied per second and each
  /// applied one's latency in µs.
  func etcdTransactions(store: String, writers: Int, keys: Int, seconds: Double, tag: String)
    async throws -> (rate: Double, latencies: [Double])
  {
    let etcd = try EtcdClient(endpoints: EtcdBrokerStore.endpoints(fromStore: store)!)
    defer { Task { [etcd] in try? await etcd.shutdown() } }
    let start = now()
    let deadline = start + UInt64(seconds * 1e9)
    let runs = try await withThrowingTaskGroup(of: (Int, [Double]).self) { group in
      for index in 0..<writers {
        group.addTask {
          let key = Data("/bench-\(tag)/\(index % keys)".utf8)
          var revision: Int64 = 0
          var applied = 0
          var latencies: [Double] = []
          var write = 0
          while now() < deadline {
            write += 1
            let sent = now()
            let result = try await etcd.transaction(
              compare: [.modRevision(of: key, equals: revision)],
              success: [.put(key, Self.payload(write))], failure: [.range(key)])
            if result.succeeded {
              revision = result.revision
              applied += 1
              latencies.append(Double(now() - sent) / 1e3)
            } else {
              revision = result.ranges.first?.first?.modRevision ?? 0
            }
          }
          return (applied, latencies)
        }
      }
      return try await group.reduce(into: [(Int, [Double])]()) { $0.append($1) }
    }
    let elapsed = Double(now() - start) / 1e9
    return (Double(runs.map(\.0).reduce(0, +)) / elapsed, runs.flatMap(\.1))
  }

  /// A single writer's sequential confirmed writes through `broker` and etcd's own transactions
  /// from a plain client, in `slices` alternating slices of `seconds` each on the same cluster,
  /// so that both meet the same etcd (its history grows, its leader's disk wanders); returns each
  /// side's write latencies in µs.
  func sequentialWrites(
    broker: BrokerProcess, store: String, slices: Int, seconds: Double, tag: String
  ) async throws -> (broker: [Double], etcd: [Double]) {
    var throughBroker: [Double] = []
    var direct: [Double] = []
    for slice in 0..<slices {
      // Each slice is a new client on a new key: a client's write ids start again at 1.
      let sliceTag = "\(tag)-seq\(slice)"
      func viaBroker() throws {
        throughBroker += try pipelinedWrites(
          broker: broker, writers: 1, keys: 1, window: 1, seconds: seconds, tag: sliceTag
        ).latencies
      }
      func viaEtcd() async throws {
        direct += try await etcdTransactions(
          store: store, writers: 1, keys: 1, seconds: seconds, tag: sliceTag
        ).latencies
      }
      // Either side goes first in turn, so neither always follows the other.
      if slice.isMultiple(of: 2) {
        try viaBroker()
        try await viaEtcd()
      } else {
        try await viaEtcd()
        try viaBroker()
      }
    }
    return (throughBroker, direct)
  }

  /// One short-lived client after another writes one key once, through a broker whose records
  /// expire after `timeout` seconds; returns the size of the key's record in etcd after 2,000
  /// clients and at the end, and the write latency (µs, median of 100) of the first and the last
  /// hundred clients.
  func shortLivedClients(count: Int, timeout: Double) async throws
    -> (sizes: (first: Int, last: Int), latencies: (first: Double, last: Double))
  {
    let etcd = try EtcdProcesses()
    defer { etcd.stop() }
    let broker = try BrokerProcess(
      bin: bin, extra: ["--store", etcd.store, "--client-timeout", "\(timeout)"])
    defer { broker.stop() }
    let context = try Context()
    defer { context.terminate() }
    let dealer = try broker.dealer(in: context, client: "short-0") {
      try $0.set(.receiveTimeout, 30_000)
    }
    defer { dealer.close() }
    let client = try EtcdClient(endpoints: EtcdBrokerStore.endpoints(fromStore: etcd.store)!)
    defer { Task { [client] in try? await client.shutdown() } }
    func recordSize() async throws -> Int {
      let (_, keyValues) = try await client.range(Data("/sharedmirror/keys/short-lived".utf8))
      return keyValues.first?.value.count ?? 0
    }
    var latencies: [Double] = []
    var sizes: [Int] = []
    var version: UInt64 = 0
    var index = 0
    var refusals = 0
    while index < count {
      index += 1
      let name = "short-\(index)"
      try dealer.send(BrokerMessage.hello(client: name).frames)
      _ = try dealer.receive()
      let sent = now()
      try dealer.send(
        BrokerMessage.write(
          client: name, write: 1, key: "short-lived", base: version, value: Self.payload(index),
          after: nil
        ).frames)
      guard let frames = try dealer.receive() else {
        throw BenchmarkError("short-lived client \(index)'s write was not answered")
      }
      switch try BrokerMessage(frames: frames) {
      case .ack(_, _, let made):
        version = made
        latencies.append(Double(now() - sent) / 1e3)
      case .reject(_, _, let current, _, _, _):
        // Another base: the next client writes on the version it was told.
        version = current
        index -= 1
      case let answer:
        // Refused (etcd answered late, the broker said it is unavailable): the next client
        // tries again, a bounded number of times.
        refusals += 1
        index -= 1
        guard refusals <= 600 else {
          throw BenchmarkError("short-lived client \(index + 1)'s write was refused: \(answer)")
        }
        pause(microseconds: 100_000)
      }
      if latencies.count == 2_000 && sizes.isEmpty || index == count {
        sizes.append(try await recordSize())
      }
    }
    return (
      (sizes[0], sizes[1]),
      (
        Distribution(Array(latencies.prefix(100))).percentile(0.5),
        Distribution(Array(latencies.suffix(100))).percentile(0.5)
      )
    )
  }
}

extension BrokerMessage {
  /// The write an ACK, REJECT or ERROR answers.
  fileprivate var writeID: UInt64? {
    switch self {
    case .ack(_, let write, _), .reject(_, let write, _, _, _, _): write
    case .error(_, _, _, let write): write
    default: nil
    }
  }
}
