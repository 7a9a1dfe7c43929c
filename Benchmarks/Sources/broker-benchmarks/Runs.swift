import Foundation
import Logging
import SharedBroker
import Sharing
import ZeroMQ

/// One measurement run of each kind; the harness repeats them and keeps medians.
struct Runs {
  let bin: String
  let selfPath: String
  let logger: Logger = {
    var logger = Logger(label: "bench")
    logger.logLevel = .critical
    return logger
  }()

  static func payload(_ count: Int) -> Data {
    Data(#"{"count":\#(count),"maxCount":\#(count),"minCount":0,"numberOfCounts":\#(count)}"#.utf8)
  }

  // MARK: - Latency and throughput

  /// The paths compared: ours through the broker process; raw libzmq with its forwarder in a
  /// process of its own that answers each message after publishing it (the same hops and
  /// messages as a write and its ACK), the same with the writer subscribed to what it writes as
  /// a `.broker` writer is (its own update comes back to it too, and the forwarder publishes to
  /// one subscriber more), the same again with the value going through Codable (the writer
  /// encodes it with `JSONEncoder`, each reader decodes it with `JSONDecoder`, as an app on raw
  /// sockets would), the same again with the writer's sockets on an I/O thread that takes each
  /// answer as it comes (as an app that hears updates between its writes must, and as a `.broker`
  /// writer does), or in the writer's process without answers (one process hop and one message
  /// fewer than ours).
  enum Mode: String {
    case mirror, raw
    case rawProcess = "raw-process"
    case rawSubscribed = "raw-subscribed"
    case rawCodable = "raw-codable"
    case rawIOThread = "raw-io-thread"

    /// Whether the path's value goes through Codable.
    var isCodable: Bool { self == .rawCodable || self == .rawIOThread }
  }

  /// What one pass over a path gave: every reader's samples, and the CPU time (µs) each part
  /// used while the writes went through.
  struct PathRun {
    let samples: [[(count: Int, time: UInt64)]]
    /// The harness process: the writer, and on the `raw` path the forwarder too.
    let writerCPU: Double
    /// The broker process, or the `raw-process` path's forwarder (none on the `raw` path).
    let brokerCPU: Double
    /// All reader processes together.
    let readersCPU: Double
    /// How many distinct values the path sent out to the readers: every write on the raw path,
    /// one per applied compare-and-set on ours.
    let published: Int

    init(readerOutputs: [String], writerCPU: Double, brokerCPU: Double = 0, published: Int) {
      samples = readerOutputs.map(Reader.samples(in:))
      readersCPU = readerOutputs.map(Reader.cpu(in:)).reduce(0, +)
      self.writerCPU = writerCPU
      self.brokerCPU = brokerCPU
      self.published = published
    }
  }

  /// Starts `count` reader processes of `mode` on `endpoint`, each waiting for `target`.
  private func startReaders(_ mode: Mode, _ count: Int, at endpoint: String, target: Int) throws
    -> [Child]
  {
    try (0..<count).map { _ in
      try Child(selfPath, ["reader", mode.rawValue, endpoint, String(target)])
    }
  }

  /// Starts the path for `mode`, `readers` reader processes, and hands the writer to `write`.
  func withPath(
    _ mode: Mode, readers: Int, target: Int,
    write: (_ send: (Int) throws -> Void) async throws -> Void
  ) async throws -> PathRun {
    switch mode {
    case .mirror:
      let broker = try BrokerProcess(bin: bin)
      defer { broker.stop() }
      let children = try startReaders(.mirror, readers, at: broker.router, target: target)
      for child in children { try child.wait(for: "ready") }
      let client = BrokerClient(endpoint: broker.router, logger: logger)
      defer { client.close() }
      let stats = withDependencies {
        $0.brokerClient = client
      } operation: {
        Shared(wrappedValue: Reader.Stats(), .broker("bench"))
      }
      try await client.waitUntilConnected()
      let brokerPID = broker.child.process.processIdentifier
      let cpuBefore = (writer: cpuMicroseconds(), broker: cpuMicroseconds(pid: brokerPID))
      try await write { count in
        stats.withLock { stats in
          stats.count = count
          stats.maxCount = count
          stats.numberOfCounts = count
        }
      }
      try await client.waitUntilConfirmed(timeout: .seconds(60))
      let outputs = children.map { $0.finish() }
      return PathRun(
        readerOutputs: outputs, writerCPU: cpuMicroseconds() - cpuBefore.writer,
        brokerCPU: cpuMicroseconds(pid: brokerPID) - cpuBefore.broker,
        published: Int(try broker.version(of: "bench"))
      )
    case .raw:
      let forwarder = try RawForwarder()
      defer { forwarder.stop() }
      return try await rawPath(
        router: forwarder.router, publisher: forwarder.publisher, forwarderPID: nil,
        acknowledged: false, readers: readers, target: target, write: write)
    case .rawProcess, .rawSubscribed, .rawCodable:
      let forwarder = try RawForwarder.Process(selfPath: selfPath, acknowledges: true)
      defer { forwarder.stop() }
      return try await rawPath(
        router: forwarder.router, publisher: forwarder.publisher,
        forwarderPID: forwarder.child.process.processIdentifier, acknowledged: true,
        subscribed: mode != .rawProcess, codable: mode.isCodable, readers: readers,
        target: target, write: write)
    case .rawIOThread:
      let forwarder = try RawForwarder.Process(selfPath: selfPath, acknowledges: true)
      defer { forwarder.stop() }
      return try await rawIOThreadPath(
        forwarder, readers: readers, target: target, write: write)
    }
  }

  /// The raw path with Codable whose writer's sockets are on an I/O thread
  /// (``RawIOThreadWriter``).
  private func rawIOThreadPath(
    _ forwarder: RawForwarder.Process, readers: Int, target: Int,
    write: (_ send: (Int) throws -> Void) async throws -> Void
  ) async throws -> PathRun {
    let children = try startReaders(.rawIOThread, readers, at: forwarder.publisher, target: target)
    let writer = try RawIOThreadWriter(endpoint: forwarder.router, publisher: forwarder.publisher)
    defer { writer.close() }
    // Warm-up messages (count 0) until every subscription is active, the writer's too.
    while writer.publishedMessages == 0 || !children.allSatisfy({ $0.output.contains("ready") }) {
      writer.send(count: 0, payload: Self.payload(0))
      usleep(5_000)
    }
    let forwarderPID = forwarder.child.process.processIdentifier
    let cpuBefore = (writer: cpuMicroseconds(), forwarder: cpuMicroseconds(pid: forwarderPID))
    let encoder = JSONEncoder()
    try await write { count in
      let stats = Reader.Stats(count: count, maxCount: count, minCount: 0, numberOfCounts: count)
      writer.send(count: count, payload: try encoder.encode(stats))
    }
    try writer.finish(through: target)
    let outputs = children.map { $0.finish() }
    return PathRun(
      readerOutputs: outputs, writerCPU: cpuMicroseconds() - cpuBefore.writer,
      brokerCPU: cpuMicroseconds(pid: forwarderPID) - cpuBefore.forwarder, published: target)
  }

  /// A raw DEALER writing to a forwarder (taking in, after each send, the answers waiting, when
  /// it gives them, as a client takes its ACKs; `subscribed`, its own messages coming back to its
  /// SUB the same way), and raw SUB readers; `codable`, the value encoded and decoded through
  /// Codable on each side.
  private func rawPath(
    router: String, publisher: String, forwarderPID: Int32?, acknowledged: Bool,
    subscribed: Bool = false, codable: Bool = false, readers: Int, target: Int,
    write: (_ send: (Int) throws -> Void) async throws -> Void
  ) async throws -> PathRun {
    let children = try startReaders(
      codable ? .rawCodable : .raw, readers, at: publisher, target: target)
    let writer = try RawWriter(endpoint: router, publisher: subscribed ? publisher : nil)
    defer { writer.close() }
    // Warm-up messages (count 0) until every subscription is active, the writer's too.
    var subscriptionActive = !subscribed
    while !subscriptionActive || !children.allSatisfy({ $0.output.contains("ready") }) {
      try writer.send(count: 0, payload: Self.payload(0))
      usleep(5_000)
      while try writer.published(wait: false) != nil { subscriptionActive = true }
    }
    // The warm-up's answers.
    if acknowledged { while try writer.acknowledged(wait: false) != nil {} }
    let cpuBefore = (writer: cpuMicroseconds(), forwarder: forwarderPID.map(cpuMicroseconds))
    var (last, seen) = (0, 0)
    let encoder = JSONEncoder()
    try await write { count in
      let payload =
        codable
        ? try encoder.encode(
          Reader.Stats(count: count, maxCount: count, minCount: 0, numberOfCounts: count))
        : Self.payload(count)
      try writer.send(count: count, payload: payload)
      while acknowledged, let answered = try writer.acknowledged(wait: false) {
        last = max(last, answered)
      }
      while subscribed, let published = try writer.published(wait: false) {
        seen = max(seen, published)
      }
    }
    while acknowledged, last < target, let answered = try writer.acknowledged(wait: true) {
      last = max(last, answered)
    }
    while subscribed, seen < target, let published = try writer.published(wait: true) {
      seen = max(seen, published)
    }
    let outputs = children.map { $0.finish() }
    return PathRun(
      readerOutputs: outputs, writerCPU: cpuMicroseconds() - cpuBefore.writer,
      brokerCPU: forwarderPID.map { cpuMicroseconds(pid: $0) - cpuBefore.forwarder! } ?? 0,
      published: target)
  }

  /// How far apart the latency runs' writes are, in µs.
  static let pace = 300.0
  /// How far apart the writes of the second 8-reader run are, in µs: with 2 cores at most a
  /// fifth busy, a reader seldom waits for a core, so the run shows the path itself.
  static let lightPace = 1_200.0

  /// Writes `pace` µs apart; returns each reader's latency samples (µs, one per write it saw),
  /// and the run's CPU time.
  func latency(
    _ mode: Mode, readers: Int, writes: Int, pace: Double
  ) async throws -> (latencies: [[Double]], run: PathRun) {
    var sent = [UInt64](repeating: 0, count: writes + 1)
    let run = try await withPath(mode, readers: readers, target: writes) { send in
      // Each write on a fixed schedule, its latency counted from when it was due: a writer held
      // up by the path delays the writes behind it, and that counts against the path (no
      // coordinated omission).
      let start = now()
      for count in 1...writes {
        sent[count] = start + UInt64(count - 1) * UInt64(pace * 1_000)
        pause(until: sent[count])
        try send(count)
      }
    }
    let latencies = run.samples.map { reader in
      reader.compactMap { sample in
        sample.count <= writes && sent[sample.count] > 0 && sample.time >= sent[sample.count]
          ? Double(sample.time - sent[sample.count]) / 1_000 : nil
      }
    }
    return (latencies, run)
  }

  /// What one throughput run gave.
  struct ThroughputRun {
    /// Writes per second whose effect reached every reader.
    let writes: Double
    /// Distinct values the path sent out (``PathRun/published``).
    let published: Int
    /// Distinct values the median reader saw.
    let seen: Int
  }

  /// Writes as fast as possible, and measures what reached the readers.
  func throughput(_ mode: Mode, readers: Int, writes: Int) async throws -> ThroughputRun {
    var start: UInt64 = 0
    let run = try await withPath(mode, readers: readers, target: writes) { send in
      start = now()
      for count in 1...writes { try send(count) }
    }
    let samples = run.samples
    guard let end = samples.compactMap({ $0.last?.time }).max(), end > start else {
      throw BenchmarkError("no reader of the \(mode) path saw a write")
    }
    let seconds = Double(end - start) / 1e9
    let delivered = samples.map { $0.last?.count ?? 0 }.min() ?? 0
    let seen = samples.map(\.count).sorted()[samples.count / 2]
    return ThroughputRun(writes: Double(delivered) / seconds, published: run.published, seen: seen)
  }

  // MARK: - Staleness

  /// Writes as fast as possible from a writer that speaks the wire protocol itself, so it knows
  /// when each write is acknowledged; returns, per write, the time from its ACK until every
  /// reader holds a value that includes it (µs; negative when the readers were first). The raw
  /// path's forwarder acknowledges each message after publishing it, as the broker does.
  func staleness(_ mode: Mode, readers: Int, writes: Int) async throws -> [Double] {
    var acknowledged = [UInt64](repeating: 0, count: writes + 1)
    let outputs: [String]
    switch mode {
    case .mirror:
      let broker = try BrokerProcess(bin: bin)
      defer { broker.stop() }
      let children = try startReaders(.mirror, readers, at: broker.router, target: writes)
      for child in children { try child.wait(for: "ready") }
      let context = try Context()
      defer { context.terminate() }
      let writer = try broker.dealer(in: context, client: "bench-writer") { writer in
        try writer.set(.sendHighWaterMark, 1_000_000)
        try writer.set(.receiveTimeout, 10_000)
      }
      defer { writer.close() }
      func record(_ frames: [Data]) throws {
        guard case .ack(_, let write, _) = try BrokerMessage(frames: frames) else {
          throw BenchmarkError("a pipelined write was not applied: \(frames)")
        }
        acknowledged[Int(write)] = now()
      }
      // Each write pipelined behind the previous one, as a client's window does.
      for count in 1...writes {
        let write = BrokerMessage.write(
          client: "bench-writer", write: UInt64(count), key: "bench", base: UInt64(count - 1),
          value: Self.payload(count), after: count > 1 ? UInt64(count - 1) : nil
        )
        try writer.send(write.frames)
        while let frames = try writer.receive(dontWait: true) { try record(frames) }
      }
      while acknowledged[writes] == 0, let frames = try writer.receive() { try record(frames) }
      outputs = children.map { $0.finish() }
    case .rawProcess, .rawSubscribed, .rawCodable, .rawIOThread:
      throw BenchmarkError("the staleness runs compare with the in-process forwarder only")
    case .raw:
      let forwarder = try RawForwarder(acknowledges: true)
      defer { forwarder.stop() }
      let children = try startReaders(.raw, readers, at: forwarder.publisher, target: writes)
      let writer = try RawWriter(endpoint: forwarder.router)
      defer { writer.close() }
      while !children.allSatisfy({ $0.output.contains("ready") }) {
        try writer.send(count: 0, payload: Self.payload(0))
        usleep(5_000)
      }
      func record(_ count: Int?) { if let count, count > 0 { acknowledged[count] = now() } }
      for count in 1...writes {
        try writer.send(count: count, payload: Self.payload(count))
        while let count = try writer.acknowledged(wait: false) { record(count) }
      }
      while acknowledged[writes] == 0, let count = try writer.acknowledged(wait: true) {
        record(count)
      }
      outputs = children.map { $0.finish() }
    }
    // Per reader, when it first held a value with each count (counts only grow).
    let reached = outputs.map(Reader.samples(in:)).map { samples in
      var times = [UInt64](repeating: 0, count: writes + 1)
      var next = 1
      for sample in samples where sample.count >= next {
        while next <= min(sample.count, writes) {
          times[next] = sample.time
          next += 1
        }
      }
      return times
    }
    return (1...writes).compactMap { count in
      let times = reached.map { $0[count] }
      guard acknowledged[count] > 0, !times.contains(0), let last = times.max() else { return nil }
      return (Double(last) - Double(acknowledged[count])) / 1_000
    }
  }

  // MARK: - Contention

  /// `writers` counter processes share `total` increments; returns the wall time (s) until
  /// every one of them has its writes confirmed, and the final count a profile reads.
  func contention(writers: Int, total: Int) throws -> (seconds: Double, count: Int) {
    let broker = try BrokerProcess(bin: bin)
    defer { broker.stop() }
    let start = now()
    let counters = try (0..<writers).map { _ in
      try Child(
        "\(bin)/counter",
        [
          "--broker", broker.router, "--script", "+x\(total / writers)", "--print", "json",
          "--timeout", "120",
        ]
      )
    }
    for counter in counters {
      _ = counter.finish()
      guard counter.process.terminationStatus == 0 else {
        throw BenchmarkError("a counter failed: \(counter.output.suffix(300))")
      }
    }
    let seconds = Double(now() - start) / 1e9
    let profile = try Child(
      "\(bin)/profile", ["--broker", broker.router, "--once", "--print", "json"])
    let line = profile.finish().split(separator: "\n").last ?? ""
    let stats = try JSONDecoder().decode(Reader.Stats.self, from: Data(line.utf8))
    return (seconds, stats.count)
  }

  // MARK: - Broker scale

  /// Fills the broker with `keys` keys and `clients` connected clients; returns its resident
  /// memory (KiB), GET round trips (µs) and full late-joiner syncs with a `BrokerClient` (ms).
  func scale(keys: Int, clients: Int) async throws -> (
    kilobytes: Int, get: [Double], join: [Double]
  ) {
    let broker = try BrokerProcess(bin: bin)
    defer { broker.stop() }
    let context = try Context()
    defer { context.terminate() }
    let loader = try broker.dealer(in: context, client: "loader") { loader in
      try loader.set(.sendHighWaterMark, 0)
      try loader.set(.receiveHighWaterMark, 0)
    }
    defer { loader.close() }
    for key in 0..<keys {
      try loader.send(
        BrokerMessage.write(
          client: "loader", write: UInt64(key + 1), key: "key-\(key)", base: 0,
          value: Self.payload(key)
        ).frames
      )
    }
    for _ in 0..<keys { _ = try loader.receive() }

    var sockets: [Socket] = []
    for index in 0..<clients {
      sockets.append(try broker.dealer(in: context, client: "idle-\(index)"))
    }
    defer { for socket in sockets { socket.close() } }
    let kilobytes = broker.residentKilobytes

    var get: [Double] = []
    for _ in 0..<2_000 {
      let key = "key-\(Int.random(in: 0..<keys))"
      let start = now()
      try loader.send(BrokerMessage.get(client: "loader", key: key).frames)
      _ = try loader.receive()
      get.append(Double(now() - start) / 1_000)
    }
    var join: [Double] = []
    for index in 0..<30 {
      let start = now()
      let client = BrokerClient(endpoint: broker.router, logger: logger)
      let value = withDependencies {
        $0.brokerClient = client
      } operation: {
        Shared(wrappedValue: Reader.Stats(), .broker("key-\(index * 97 % keys)"))
      }
      try await client.waitUntilConnected()
      join.append(Double(now() - start) / 1e6)
      precondition(value.wrappedValue.count == index * 97 % keys)
      client.close()
    }
    return (kilobytes, get, join)
  }

  // MARK: - Durability

  /// Sequential confirmed writes per second on one key, with or without `--data`.
  /// Where a broker keeps its keys.
  enum Storage {
    case memory, data, etcd
  }

  func durability(_ storage: Storage, writes: Int) throws -> Double {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID())")
    defer { try? FileManager.default.removeItem(at: directory) }
    let etcd = storage == .etcd ? try EtcdProcesses() : nil
    defer { etcd?.stop() }
    let extra =
      switch storage {
      case .memory: [String]()
      case .data: ["--data", directory.path]
      case .etcd: ["--store", etcd!.store]
      }
    let broker = try BrokerProcess(bin: bin, extra: extra)
    defer { broker.stop() }
    let context = try Context()
    defer { context.terminate() }
    let dealer = try broker.dealer(in: context, client: "durable")
    defer { dealer.close() }
    let start = now()
    for write in 1...writes {
      try dealer.send(
        BrokerMessage.write(
          client: "durable", write: UInt64(write), key: "k", base: UInt64(write - 1),
          value: Self.payload(write)
        ).frames
      )
      _ = try dealer.receive()
    }
    return Double(writes) / (Double(now() - start) / 1e9)
  }

  /// Two brokers on one etcd cluster and a client given both: the broker the client talks to is
  /// SIGKILLed (and started again on its endpoints) `times` times. Each figure is the time from
  /// the kill until a write made right after it is confirmed by the other broker, in ms.
  func failover(times: Int) async throws -> [Double] {
    let etcd = try EtcdProcesses()
    defer { etcd.stop() }
    var brokers = [
      try BrokerProcess(bin: bin, extra: ["--store", etcd.store]),
      try BrokerProcess(bin: bin, extra: ["--store", etcd.store]),
    ]
    defer { for broker in brokers { broker.stop() } }
    var logger = Logger(label: "failover")
    logger.logLevel = .critical
    let client = BrokerClient(endpoints: brokers.map(\.router), logger: logger)
    defer { client.close() }
    let count = withDependencies {
      $0.brokerClient = client
    } operation: {
      Shared(wrappedValue: 0, .broker("failover"))
    }
    try await client.waitUntilConnected()
    var durations: [Double] = []
    for _ in 0..<times {
      count.withLock { $0 += 1 }
      try await client.waitUntilConfirmed()
      guard let victim = brokers.firstIndex(where: { $0.router == client.currentEndpoint }) else {
        throw BenchmarkError("the client talks to none of the brokers")
      }
      brokers[victim].kill()
      let start = now()
      count.withLock { $0 += 1 }
      try await client.waitUntilConfirmed(timeout: .seconds(30))
      durations.append(Double(now() - start) / 1e6)
      brokers[victim] = try BrokerProcess(
        bin: bin, extra: ["--store", etcd.store], listen: brokers[victim].router,
        publish: brokers[victim].publisher)
    }
    return durations
  }

  // MARK: - Compare-and-set against Redis

  /// Python processes incrementing one JSON value with compare-and-set, through the broker and
  /// through Redis, by `Scripts/cas_vs_redis.py`; returns its table and ratio (Markdown lines).
  func compareAndSetAgainstRedis(runs: Int) throws -> [String] {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../../Scripts/cas_vs_redis.py").standardized.path
    let child = try Child("/usr/bin/python3", [script, bin, String(runs), "3", "3000"])
    let output = child.finish()
    guard child.process.terminationStatus == 0 else {
      throw BenchmarkError("the compare-and-set runs failed: \(output.suffix(500))")
    }
    let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    // The runs' lines, then the table after the first empty line.
    let table = lines.drop { !$0.isEmpty }.dropFirst()
    return Array(table.reversed().drop(while: \.isEmpty).reversed())
      + ["", "Per run: " + lines.filter { $0.hasPrefix("cas-run") }.joined(separator: "; ") + "."]
  }
}
