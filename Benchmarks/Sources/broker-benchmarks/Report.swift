import Foundation

/// Collects the figures, prints them, and writes `RESULTS.md` plus `latency.dat` and
/// `throughput.dat` for the chart.
struct Report {
  let runs: Int
  private var markdown: [String] = []
  private var chart: [String] = []
  private var throughputChart: [String] = []

  init(runs: Int) {
    self.runs = runs
    let machine = ProcessInfo.processInfo
    markdown = [
      "# Broker benchmarks",
      "",
      "Measured by `make bench` on \(machine.activeProcessorCount) cores, "
        + "\(machine.physicalMemory >> 30) GiB, loopback TCP. Each figure is the median of "
        + "\(runs) runs; each baseline was measured in the same run. The readers, writers and "
        + "broker are separate processes, except the writer of the latency and throughput runs, "
        + "which is the harness process itself.",
      "",
    ]
  }

  /// The spread of per-run values, the machine's noise: `1.61–1.83`.
  private func spread(_ values: [Double], _ digits: Int = 2) -> String {
    "\(format(values.min() ?? 0, digits))–\(format(values.max() ?? 0, digits))"
  }

  private mutating func section(_ title: String, _ lines: [String]) {
    markdown += ["## \(title)", ""] + lines + [""]
    print((["", "== \(title)"] + lines).joined(separator: "\n"))
  }

  /// One path's runs of a latency section: per run, each reader's samples and the CPU used.
  struct Path {
    let mode: Runs.Mode
    let runs: [(latencies: [[Double]], run: Runs.PathRun)]

    var name: String {
      switch mode {
      case .mirror: "SharedMirror `.broker`"
      case .raw: "raw libzmq, forwarder in the writer's process, no answers"
      case .rawProcess: "raw libzmq, forwarder process answering each message"
      }
    }

    var chartName: String {
      switch mode {
      case .mirror: "mirror"
      case .raw: "raw in-process"
      case .rawProcess: "raw process"
      }
    }

    /// Every reader's samples together, per run.
    var samples: [[Double]] { runs.map { $0.latencies.flatMap { $0 } } }
  }

  /// The paths' latencies; the first path is the baseline the goals name, the last is ours.
  mutating func latency(readers: Int, writes: Int, _ paths: [Path]) {
    func stat(_ runs: [[Double]], _ p: Double) -> Double { median(runs.map { percentile($0, p) }) }
    /// The p50 of the fastest and of the slowest reader (medians over runs).
    func order(_ path: Path) -> String {
      let p50s = path.runs.map { $0.latencies.map { median($0) } }
      let fastest = median(p50s.map { $0.min() ?? .nan })
      let slowest = median(p50s.map { $0.max() ?? .nan })
      return "\(format(fastest))–\(format(slowest)) µs"
    }
    var rows = [
      "Propagation from the writer's `withLock` (raw: its send) to each reader seeing the value, "
        + "\(writes) writes paced 300 µs apart, \(readers) reader\(readers == 1 ? "" : "s") (µs):",
      "",
      "| path | p50 | p99 | p99.9 |",
      "|---|---:|---:|---:|",
    ]
    for path in paths {
      let samples = path.samples
      rows.append(
        "| \(path.name) | \(format(stat(samples, 0.5))) | \(format(stat(samples, 0.99))) | "
          + "\(format(stat(samples, 0.999))) |")
    }
    let ours = paths.last!.samples
    rows.append("")
    for (index, baseline) in paths.dropLast().enumerated() {
      let raw = baseline.samples
      let p50 = stat(ours, 0.5) / stat(raw, 0.5)
      let p99 = stat(ours, 0.99) / stat(raw, 0.99)
      rows.append(
        "Against \(baseline.name): p50 **\(format(p50, 2))×**"
          + (index == 0 ? " (goal ≤ 1.3×)" : "") + ", p99 **\(format(p99, 2))×**; per run "
          + "p50 \(spread(zip(ours, raw).map { percentile($0, 0.5) / percentile($1, 0.5) }))×, "
          + "p99 \(spread(zip(ours, raw).map { percentile($0, 0.99) / percentile($1, 0.99) }))×.")
    }
    if readers > 1 {
      rows.append(
        "p50 of the fastest and of the slowest reader: "
          + paths.map { "\($0.chartName) \(order($0))" }.joined(separator: ", ")
          + ". The fastest reader shows what the hops before the readers take; the spread, how "
          + "long two cores take to serve all the readers.")
    }
    section("1. Latency, \(readers) reader\(readers == 1 ? "" : "s")", rows)
    for path in paths {
      let samples = path.samples
      chart.append(
        "\"\(path.chartName) \(readers)r\" \(stat(samples, 0.5)) \(stat(samples, 0.99)) "
          + "\(stat(samples, 0.999))")
    }
  }

  /// Where the CPU time of the latency runs went, per write: with 8 readers on 2 cores, how busy
  /// the machine is decides how long each reader waits for a core.
  mutating func cpu(readers: Int, writes: Int, _ paths: [Path]) {
    let period = 300.0
    let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
    func perWrite(_ path: Path, _ figure: (Runs.PathRun) -> Double) -> Double {
      median(path.runs.map { figure($0.run) }) / Double(writes)
    }
    func total(_ run: Runs.PathRun) -> Double { run.writerCPU + run.brokerCPU + run.readersCPU }
    var rows = [
      "CPU time per write in the latency runs above (µs, user + system, from /proc; a clock tick "
        + "is 10 ms, so about 1 µs per write), and how busy that keeps \(format(cores, 0)) cores "
        + "at one write every \(format(period, 0)) µs:",
      "",
      "| path | writer process | broker or forwarder | readers | total | cores busy |",
      "|---|---:|---:|---:|---:|---:|",
    ]
    for path in paths {
      let readersCPU = perWrite(path, \.readersCPU)
      let all = perWrite(path, total)
      rows.append(
        "| \(path.name) | \(format(perWrite(path, \.writerCPU))) | "
          + "\(path.mode == .raw ? "—" : format(perWrite(path, \.brokerCPU))) | "
          + "\(format(readersCPU)) (\(format(readersCPU / Double(readers))) each) | "
          + "\(format(all)) | \(format(100 * all / (period * cores), 0))% |")
    }
    let ours = paths.last!
    rows.append("")
    for (index, baseline) in paths.dropLast().enumerated() {
      let perRun = zip(ours.runs, baseline.runs).map { total($0.run) / total($1.run) }
      let readersPerRun = zip(ours.runs, baseline.runs).map {
        $0.run.readersCPU / $1.run.readersCPU
      }
      rows.append(
        "Against \(baseline.name): total **\(format(perWrite(ours, total) / perWrite(baseline, total), 2))×**"
          + (index == 0 ? " (goal ≤ 1.6×)" : "") + " (per run \(spread(perRun))×), readers "
          + "**\(format(perWrite(ours, \.readersCPU) / perWrite(baseline, \.readersCPU), 2))×**"
          + (index == 0 ? " (goal ≤ 1.5×)" : "") + " (per run \(spread(readersPerRun))×).")
    }
    section("1. CPU per write, \(readers) reader\(readers == 1 ? "" : "s")", rows)
  }

  mutating func throughput(writes: Int, ours: [Runs.ThroughputRun], raw: [Runs.ThroughputRun]) {
    func middle(_ runs: [Runs.ThroughputRun], _ figure: (Runs.ThroughputRun) -> Double) -> Double {
      median(runs.map(figure))
    }
    let rawWrites = middle(raw, \.writes)
    let ourWrites = middle(ours, \.writes)
    throughputChart = [
      "\"raw libzmq\" \(rawWrites)",
      "\"SharedMirror\" \(ourWrites)",
    ]
    func row(_ name: String, _ runs: [Runs.ThroughputRun]) -> String {
      let figures = [
        middle(runs, \.writes), middle(runs) { Double($0.published) },
        middle(runs) { Double($0.seen) },
      ]
      return "| \(name) | " + figures.map { format($0, 0) }.joined(separator: " | ") + " |"
    }
    section(
      "2. Throughput, one writer, 8 subscribers",
      [
        "The writer makes \(writes) writes as fast as it can (`withLock` on ours); the run ends when "
          + "every reader has seen the last one.",
        "",
        "| path | writes/s reaching all 8 | distinct values sent out | distinct values a subscriber saw |",
        "|---|---:|---:|---:|",
        row("raw libzmq", raw),
        row("SharedMirror `.broker`", ours),
        "",
        "Writes reaching everyone: **\(format(ourWrites / rawWrites, 2))×** raw (goal ≥ 0.5×). "
          + "Per run (noise): \(spread(zip(ours, raw).map { $0.writes / $1.writes }))×.",
        "",
        "SharedMirror batches the mutations made while its writes are in flight into one "
          + "compare-and-set, and a reader that finds several updates waiting decodes only the "
          + "newest: how many distinct values it sees says little. How stale its value gets does, "
          + "below.",
      ])
  }

  /// `ours` and `raw` hold, per run, each write's staleness (µs).
  mutating func staleness(readers: Int, writes: Int, ours: [[Double]], raw: [[Double]]) {
    func stat(_ runs: [[Double]], _ p: Double) -> Double { median(runs.map { percentile($0, p) }) }
    let ratio = stat(ours, 0.5) / stat(raw, 0.5)
    section(
      "2b. Staleness under flat-out writes, \(readers) subscribers",
      [
        "One writer sends \(writes) writes as fast as it can, each pipelined behind the previous one "
          + "(the wire protocol's own `WRITE`s, so it knows each one's `ACK`); per write, the time "
          + "from its `ACK` until every one of the \(readers) subscribers holds a value that includes "
          + "it (µs; the broker publishes before it answers, so a value can arrive before the ACK "
          + "and the time is negative). The raw path's forwarder answers each message right after "
          + "publishing it.",
        "",
        "| path | p50 | p99 |",
        "|---|---:|---:|",
        "| raw libzmq DEALER→ROUTER→PUB→SUB | \(format(stat(raw, 0.5))) | \(format(stat(raw, 0.99))) |",
        "| SharedMirror `.broker` readers | \(format(stat(ours, 0.5))) | \(format(stat(ours, 0.99))) |",
        "",
        "p50: **\(format(ratio, 2))×** raw. Per run (noise): "
          + "\(spread(zip(ours, raw).map { percentile($0, 0.5) / percentile($1, 0.5) }))×.",
      ])
  }

  mutating func contention(four: [(Double, Int)], one: [(Double, Int)]) {
    let ratio = median(four.map(\.0)) / median(one.map(\.0))
    let exact = (four + one).allSatisfy { $0.1 == 40_000 }
    section(
      "3. Contention, 40,000 `withLock` increments",
      [
        "| writers | wall time until confirmed (s) | final count |",
        "|---|---:|---:|",
        "| 1 `counter` process, +x40000 | \(format(median(one.map(\.0)), 2)) | \(one.map { String($0.1) }.joined(separator: ", ")) |",
        "| 4 `counter` processes, +x10000 each | \(format(median(four.map(\.0)), 2)) | \(four.map { String($0.1) }.joined(separator: ", ")) |",
        "",
        "Ratio 4 writers / 1 writer: **\(format(ratio, 2))×** (goal ≤ 2×). Every result exactly "
          + "40,000: **\(exact ? "yes" : "NO")**. Per run (noise): "
          + "\(spread(zip(four, one).map { $0.0 / $1.0 }))×.",
      ])
  }

  mutating func scale(_ runs: [(Int, [Double], [Double])]) {
    section(
      "5. Broker scale: 100,000 keys, 100 connected clients",
      [
        "| measure | value |",
        "|---|---:|",
        "| broker resident memory (per run) | \(format(median(runs.map { Double($0.0) }) / 1024, 1)) MiB "
          + "(\(spread(runs.map { Double($0.0) / 1024 }, 1))) |",
        "| GET snapshot round trip, p50 / p99 | \(format(median(runs.map { percentile($0.1, 0.5) }))) / \(format(median(runs.map { percentile($0.1, 0.99) }))) µs |",
        "| late joiner, new client to synced key, p50 / p99 | \(format(median(runs.map { percentile($0.2, 0.5) }), 2)) / \(format(median(runs.map { percentile($0.2, 0.99) }), 2)) ms |",
      ])
  }

  mutating func durability(with: [Double], without: [Double], etcd: [Double]) {
    section(
      "6. Durability cost",
      [
        "Sequential confirmed writes on one key (WRITE, wait for ACK, next):",
        "",
        "| broker | writes/s | µs per confirmed write |",
        "|---|---:|---:|",
        "| in memory | \(format(median(without), 0)) | \(format(1e6 / median(without))) |",
        "| `--data` (log appended before each ACK) | \(format(median(with), 0)) | \(format(1e6 / median(with))) |",
        "| `--store etcd://…` (3 members on loopback, one transaction per write) | \(format(median(etcd), 0)) | \(format(1e6 / median(etcd))) |",
        "",
        "With `--data`: **\(format(median(with) / median(without), 2))×** the in-memory rate. "
          + "Per run (noise): \(spread(zip(with, without).map { $0 / $1 }))×.",
        "With etcd: **\(format(median(etcd) / median(without), 3))×** the in-memory rate. "
          + "Per run (noise): \(spread(zip(etcd, without).map { $0 / $1 }))×.",
      ])
  }

  /// One row of the cluster's table: per run, confirmed writes per second through a broker on
  /// etcd, etcd's own transactions, and the single broker in memory.
  struct ClusterRow {
    let writers: Int
    let keys: Int
    var broker: [Double] = []
    var etcd: [Double] = []
    var single: [Double] = []
    /// Per run, µs: a sequential write through the broker, and etcd's own transaction.
    var sequential: [Double] = []
    var etcdSequential: [Double] = []
    var pings: [Double] = []
    /// Whether every key ended at as many versions as writes were acknowledged.
    var exact = true
  }

  mutating func cluster(_ rows: [ClusterRow], election: [Runs.WriterRun]) {
    var lines = [
      "Brokers with `--store` on a 3-member etcd cluster on loopback. Each writer keeps 4 writes "
        + "in flight on its key, as the client does (a REJECT restarts its chain); etcd's own "
        + "rate is the same compare-and-set transactions from a plain HTTP client "
        + "(async-http-client), one at a time per writer, at the same concurrency, in the same run.",
      "",
      "| writers on keys | through a broker on etcd, writes/s | etcd's own transactions/s | ratio | single broker in memory, writes/s | ratio to it | every write counted once |",
      "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows {
      let ratio = zip(row.broker, row.etcd).map { $0 / $1 }
      let toSingle = zip(row.broker, row.single).map { $0 / $1 }
      lines.append(
        "| \(row.writers) on \(row.keys) | \(format(median(row.broker), 0)) | \(format(median(row.etcd), 0)) "
          + "| **\(format(median(ratio), 2))×** (\(spread(ratio))) | \(format(median(row.single), 0)) "
          + "| \(format(median(toSingle), 3))× | \(row.exact ? "yes" : "**no**") |")
    }
    if let row = rows.first(where: { !$0.sequential.isEmpty }) {
      let ratio = zip(row.sequential, row.etcdSequential).map { $0 / $1 }
      lines += [
        "",
        "A single writer's sequential confirmed write (one in flight; the broker's and etcd's "
          + "own in alternating slices of each run, on the same cluster): p50 "
          + "\(format(median(row.sequential))) µs through the broker, \(format(median(row.etcdSequential))) µs "
          + "for etcd's own transaction: **\(format(median(ratio), 2))×** (\(spread(ratio))).",
      ]
    }
    let pings = rows.flatMap(\.pings)
    let electionPings = election.flatMap(\.pings)
    let exact = election.allSatisfy { $0.acknowledged == $0.versions }
    lines += [
      "",
      "Heartbeats (`PING` every 20 ms on a connection of its own) while the writers' transactions "
        + "are out: p50 \(format(percentile(pings, 0.5), 2)) ms, p99 \(format(percentile(pings, 0.99), 2)) ms, "
        + "slowest \(format(pings.max() ?? .nan, 2)) ms. With etcd's leader SIGKILLed under 4 writers on one "
        + "key (\(election.count) runs): slowest \(format(electionPings.max() ?? .nan, 2)) ms (a client moves "
        + "after 1,500 ms of silence), \(election.map(\.unavailable).reduce(0, +)) answered `unavailable` "
        + "(a client moves at once); every write counted once: \(exact ? "yes" : "**no**") "
        + "(\(election.map(\.acknowledged).reduce(0, +)) acknowledged).",
    ]
    section("8. A cluster on etcd", lines)
  }

  mutating func shortLived(
    _ run: (sizes: (first: Int, last: Int), latencies: (first: Double, last: Double))
  ) {
    section(
      "8b. A key written by 10,000 short-lived clients",
      [
        "Each client says HELLO and writes the key once, one after another, through a broker on "
          + "a 3-member etcd cluster with `--client-timeout 2`: the key's record in etcd is "
          + "\(run.sizes.first) bytes after 2,000 clients and \(run.sizes.last) bytes after 10,000; a write "
          + "takes \(format(run.latencies.first)) µs (p50) for the first hundred clients and "
          + "\(format(run.latencies.last)) µs for the last hundred."
      ])
  }

  /// What a user would pick instead for a shared counter: Redis's optimistic transactions.
  mutating func compareAndSet(_ lines: [String]) {
    section("9. Compare-and-set from Python, against Redis", lines)
  }

  mutating func failover(_ runs: [[Double]]) {
    let all = runs.flatMap { $0 }
    section(
      "7. Fail-over",
      [
        "Two brokers on a 3-member etcd cluster; a client given both. The broker it talks to is "
          + "SIGKILLed; the time from the kill until a write made right after it is confirmed "
          + "through the other broker (\(all.count) fail-overs, \(runs.count) runs):",
        "",
        "| p50 | p99 | slowest |",
        "|---:|---:|---:|",
        "| \(format(percentile(all, 0.5))) ms | \(format(percentile(all, 0.99))) ms | \(format(all.max() ?? .nan)) ms |",
        "",
        "Median per run (noise): \(runs.map { format(median($0)) }.joined(separator: ", ")) ms.",
      ])
  }

  func write() throws {
    var text = markdown
    // `make bench` runs composable-benchmarks first and keeps its table in composable.md.
    let storeSend =
      (try? String(contentsOfFile: "composable.md", encoding: .utf8))
      .map { [$0.trimmingCharacters(in: .whitespacesAndNewlines)] }
      ?? [
        "Run `composable-benchmarks` (part of `make bench`) for ns per action against a direct reducer call."
      ]
    text += ["## 4. Store.send", ""] + storeSend + ["", "![latency](latency.png)", ""]
    try text.joined(separator: "\n").write(toFile: "RESULTS.md", atomically: true, encoding: .utf8)
    try (chart.joined(separator: "\n") + "\n").write(
      toFile: "latency.dat", atomically: true, encoding: .utf8)
    try (throughputChart.joined(separator: "\n") + "\n")
      .write(toFile: "throughput.dat", atomically: true, encoding: .utf8)
  }
}
