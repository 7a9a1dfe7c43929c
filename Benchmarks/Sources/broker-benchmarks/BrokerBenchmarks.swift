import Foundation

/// The benchmarks of `make bench`. Every figure is printed next to a baseline measured in the
/// same run, and is the median of several runs. The whole of `RESULTS.md` is written from the
/// run, with the data files of its charts.
///
/// Usage: `broker-benchmarks run BIN_DIR [RUNS [SECTION...]]` (the harness; naming sections,
/// e.g. `latency`, runs only those, and the report's header says so), or
/// `broker-benchmarks reader MODE ENDPOINT COUNT` (a reader process, started by the harness).
@main
enum BrokerBenchmarks {
  static func main() async {
    do {
      try await run(Array(CommandLine.arguments.dropFirst()))
    } catch {
      FileHandle.standardError.write(Data("broker-benchmarks: \(error)\n".utf8))
      exit(1)
    }
  }

  static func run(_ arguments: [String]) async throws {
    switch arguments.first {
    case "reader":
      try await Reader.run(Array(arguments.dropFirst()))
    case "clients":
      try ManyClients.run(Array(arguments.dropFirst()))
    case "tapper":
      try await Tapper.run(Array(arguments.dropFirst()))
    case "forwarder":
      try RawForwarder.serve(acknowledges: arguments.dropFirst().first == "acknowledging")
    case "run" where arguments.count >= 2:
      let runs = arguments.count > 2 ? Int(arguments[2]) : 3
      guard let runs, runs >= 1 else {
        throw BenchmarkError("RUNS must be a whole number of 1 or more, not \"\(arguments[2])\"")
      }
      try await harness(bin: arguments[1], runs: runs, only: Set(arguments.dropFirst(3)))
    default:
      print(
        "usage: broker-benchmarks run BIN_DIR [RUNS [\(sections.joined(separator: "|"))...]]"
          + " | reader MODE ENDPOINT COUNT | clients MODE ROUTER PUBLISHER COUNT FIRST WRITES"
          + " | forwarder [acknowledging] | tapper ROUTER TAPS PACE_MS"
      )
      exit(64)
    }
  }

  /// The sections, in the order they run.
  static let sections = [
    "store-send", "latency", "throughput", "staleness", "contention", "scale", "durability",
    "failover", "cluster", "short-lived", "cas", "clients", "web", "permissions",
  ]

  static func harness(bin: String, runs: Int, only: Set<String>) async throws {
    if let unknown = only.subtracting(sections).first {
      throw BenchmarkError("no section \"\(unknown)\": \(sections.joined(separator: ", "))")
    }
    let runner = Runs(bin: bin, selfPath: CommandLine.arguments[0])
    // The binaries' directory is this machine's; the report names what gives it.
    let command = (["broker-benchmarks", "run", "$(swift build -c release --show-bin-path)"]
      + CommandLine.arguments.dropFirst(3)).joined(separator: " ")
    var report = Report(
      runs: runs, sections: sections.filter { only.isEmpty || only.contains($0) },
      selected: !only.isEmpty, command: command)
    let writes = 10_000
    func wanted(_ section: String) -> Bool { only.isEmpty || only.contains(section) }

    if wanted("store-send") { report.storeSend(from: ".build/composable") }
    for (readers, pace) in [(1, Runs.pace), (8, Runs.pace), (8, Runs.lightPace)]
    where wanted("latency") {
      // Alternated within each run, so the machine's drift touches every path alike.
      let modes: [Runs.Mode] = [
        .rawProcess, .rawSubscribed, .rawCodable, .rawIOThread, .raw, .mirror,
      ]
      var results: [Runs.Mode: [(latencies: [[Double]], run: Runs.PathRun)]] = [:]
      for _ in 0..<runs {
        for mode in modes {
          results[mode, default: []].append(
            try await runner.latency(mode, readers: readers, writes: writes, pace: pace))
        }
      }
      let paths = modes.map { Report.Path(mode: $0, runs: results[$0]!) }
      report.latency(readers: readers, writes: writes, pace: pace, paths)
      report.cpu(readers: readers, writes: writes, pace: pace, paths)
    }

    if wanted("throughput") { try await throughput(runner, runs: runs, into: &report) }
    if wanted("staleness") { try await staleness(runner, runs: runs, into: &report) }
    if wanted("contention") { try contention(runner, runs: runs, into: &report) }
    if wanted("scale") {
      var scale: [(Int, [Double], [Double])] = []
      for _ in 0..<runs { scale.append(try await runner.scale(keys: 100_000, clients: 100)) }
      report.scale(scale)
    }
    if wanted("durability") { try durability(runner, runs: runs, into: &report) }
    if wanted("failover") {
      var runsOfFailover: [[Double]] = []
      for _ in 0..<runs { runsOfFailover.append(try await runner.failover(times: 10)) }
      report.failover(runsOfFailover)
    }
    if wanted("cluster") { try await cluster(runner, runs: runs, into: &report) }
    if wanted("short-lived") {
      report.shortLived(try await runner.shortLivedClients(count: 10_000, timeout: 2))
    }
    if wanted("cas") { report.compareAndSet(try runner.compareAndSetAgainstRedis(runs: runs)) }
    if wanted("clients") {
      var rows: [Report.ClientsRow] = []
      for clients in [1_000, 4_000, 8_000] {
        var row = Report.ClientsRow(clients: clients)
        for _ in 0..<runs {
          // Alternated within each run, as the latency paths are.
          let (writes, pace) = (ManyClients.writes, ManyClients.pace(clients: clients))
          row.raw.append(
            try runner.manyClients(.rawProcess, clients: clients, writes: writes, pace: pace))
          row.ours.append(
            try runner.manyClients(.mirror, clients: clients, writes: writes, pace: pace))
        }
        rows.append(row)
      }
      report.clients(rows)
    }
    if wanted("web") {
      var webRuns: [Runs.WebFrontRun] = []
      for _ in 0..<runs { webRuns.append(try runner.webFront()) }
      report.webFront(webRuns)
    }
    if wanted("permissions") {
      var costs: [Runs.AllowListShape: [Double]] = [:]
      for _ in 0..<runs {
        // Alternated within each run, as the latency paths are.
        for shape in Runs.AllowListShape.allCases {
          costs[shape, default: []].append(
            try await runner.permissionsCost(shape, writes: writes, pace: Runs.pace))
        }
      }
      report.permissions(writes: writes, pace: Runs.pace, costs)
    }
    try report.write()
  }

  static func cluster(_ runner: Runs, runs: Int, into report: inout Report) async throws {
    let seconds = 4.0
    var rows: [Report.ClusterRow] = []
    for (writers, keys) in [(1, 1), (4, 1), (4, 4)] {
      var row = Report.ClusterRow(writers: writers, keys: keys)
      for run in 0..<runs {
        let tag = "w\(writers)k\(keys)r\(run)"
        let etcd = try EtcdProcesses()
        defer { etcd.stop() }
        let broker = try BrokerProcess(bin: runner.bin, extra: ["--store", etcd.store])
        let through = try runner.pipelinedWrites(
          broker: broker, writers: writers, keys: keys, window: 4, seconds: seconds, tag: tag)
        let sequential =
          writers == 1
          ? try await runner.sequentialWrites(
            broker: broker, store: etcd.store, slices: 8, seconds: seconds / 8, tag: tag)
          : nil
        broker.stop()
        let direct = try await runner.etcdTransactions(
          store: etcd.store, writers: writers, keys: keys, seconds: seconds, tag: tag)
        let single = try BrokerProcess(bin: runner.bin)
        let alone = try runner.pipelinedWrites(
          broker: single, writers: writers, keys: keys, window: 4, seconds: seconds, tag: tag)
        single.stop()
        row.broker.append(through.rate)
        row.etcd.append(direct.rate)
        row.single.append(alone.rate)
        row.pings += through.pings
        row.exact = row.exact && through.acknowledged == through.versions
        if let sequential {
          row.sequential.append(median(sequential.broker))
          row.etcdSequential.append(median(sequential.etcd))
        }
      }
      rows.append(row)
    }
    // A leader killed under 4 writers on one key.
    var election: [(run: Runs.WriterRun, elected: Double)] = []
    for run in 0..<runs {
      let etcd = try EtcdProcesses()
      defer { etcd.stop() }
      let broker = try BrokerProcess(bin: runner.bin, extra: ["--store", etcd.store])
      defer { broker.stop() }
      var elected = 0.0
      let writes = try runner.pipelinedWrites(
        broker: broker, writers: 4, keys: 1, window: 4, seconds: 8, tag: "election\(run)"
      ) {
        pause(microseconds: 2_000_000)
        elected = try etcd.killLeader()
      }
      election.append((writes, elected))
    }
    report.cluster(rows, election: election)
  }

  static func throughput(_ runner: Runs, runs: Int, into report: inout Report) async throws {
    var ours: [Runs.ThroughputRun] = []
    var raw: [Runs.ThroughputRun] = []
    for _ in 0..<runs {
      raw.append(try await runner.throughput(.raw, readers: 8, writes: 20_000))
      ours.append(try await runner.throughput(.mirror, readers: 8, writes: 20_000))
    }
    report.throughput(writes: 20_000, ours: ours, raw: raw)
  }

  static func staleness(_ runner: Runs, runs: Int, into report: inout Report) async throws {
    var ours: [[Double]] = []
    var raw: [[Double]] = []
    for _ in 0..<runs {
      raw.append(try await runner.staleness(.raw, readers: 8, writes: 20_000))
      ours.append(try await runner.staleness(.mirror, readers: 8, writes: 20_000))
    }
    report.staleness(readers: 8, writes: 20_000, ours: ours, raw: raw)
  }

  static func contention(_ runner: Runs, runs: Int, into report: inout Report) throws {
    var four: [(Double, Int)] = []
    var one: [(Double, Int)] = []
    for _ in 0..<runs {
      one.append(try runner.contention(writers: 1, total: 40_000))
      four.append(try runner.contention(writers: 4, total: 40_000))
    }
    report.contention(four: four, one: one)
  }

  static func durability(_ runner: Runs, runs: Int, into report: inout Report) throws {
    var withData: [Double] = []
    var withoutData: [Double] = []
    var withEtcd: [Double] = []
    for _ in 0..<runs {
      withoutData.append(try runner.durability(.memory, writes: 5_000))
      withData.append(try runner.durability(.data, writes: 5_000))
      withEtcd.append(try runner.durability(.etcd, writes: 2_000))
    }
    report.durability(with: withData, without: withoutData, etcd: withEtcd)
  }
}
