import Foundation
import SharedBroker

/// Collects the figures, prints them, and writes the whole of `RESULTS.md` from this run: a
/// header that says what ran where, the sections in the order they ran, numbered as they come,
/// and the data files of the charts (`Scripts/*.gnuplot` draws them).
struct Report {
  let runs: Int
  /// The sections this run makes, by name, and whether they were chosen by name.
  let sections: [String]
  let selected: Bool
  let command: String
  /// Taken when the run starts: the binaries are built from the tree as it is then.
  private let commit = Report.currentCommit()
  private let started = Date()
  private var markdown: [String] = []
  private var number = 0
  /// The charts' data files: name, then lines.
  private var charts: [(file: String, lines: [String])] = []

  init(runs: Int, sections: [String], selected: Bool, command: String) {
    self.runs = runs
    self.sections = sections
    self.selected = selected
    self.command = command
  }

  /// The spread of per-run values, the machine's noise: `1.61–1.83`.
  private func spread(_ values: [Double], _ digits: Int = 2) -> String {
    "\(format(values.min() ?? 0, digits))–\(format(values.max() ?? 0, digits))"
  }

  /// A goal and whether `value` meets it: ` (goal ≤ 1.3×: **not met**)`.
  private func goal(_ value: Double, atMost bound: Double, unit: String = "×") -> String {
    " (goal ≤ \(format(bound, bound == bound.rounded() ? 0 : 1))\(unit): "
      + "\(shown(value) <= bound ? "met" : "**not met**"))"
  }

  /// A goal for a figure that should be large: ` (goal ≥ 0.5×: met)`.
  private func goal(_ value: Double, atLeast bound: Double) -> String {
    " (goal ≥ \(format(bound, 1))×: \(shown(value) >= bound ? "met" : "**not met**"))"
  }

  /// A figure as the report shows it (two decimals), so that a verdict agrees with the text.
  private func shown(_ value: Double) -> Double { (value * 100).rounded() / 100 }

  private mutating func section(_ title: String, _ lines: [String]) {
    number += 1
    markdown += ["## \(number). \(title)", ""] + lines + [""]
    print((["", "== \(number). \(title)"] + lines).joined(separator: "\n"))
  }

  private mutating func chart(_ file: String, _ lines: [String]) {
    charts.append((file, lines))
  }

  /// One path's runs of a latency section: per run, each reader's samples and the CPU used.
  struct Path {
    let mode: Runs.Mode
    let runs: [(latencies: [[Double]], run: Runs.PathRun)]

    var name: String {
      switch mode {
      case .mirror: "SharedMirror `.broker`, its value `@JSONCodable`"
      case .raw: "raw libzmq, forwarder in the writer's process, no answers"
      case .rawProcess: "raw libzmq, forwarder process answering each message"
      case .rawSubscribed: "the same, its writer also subscribed to what it writes"
      case .rawCodable: "the same, its value through Codable (`JSONEncoder`, `JSONDecoder`)"
      case .rawIOThread: "the same, the writer's sockets on an I/O thread that takes each answer as it comes"
      }
    }

    var chartName: String {
      switch mode {
      case .mirror: "mirror"
      case .raw: "raw in-process"
      case .rawProcess: "raw process"
      case .rawSubscribed: "raw process, writer subscribed"
      case .rawCodable: "raw process, subscribed, Codable"
      case .rawIOThread: "raw process, subscribed, Codable, I/O thread"
      }
    }

    /// Every reader's samples together, per run.
    var samples: [[Double]] { runs.map { $0.latencies.flatMap { $0 } } }
  }

  /// What tells a latency run apart: its readers, and its pace when it is not the usual one.
  private func latencyName(readers: Int, pace: Double) -> (title: String, tag: String) {
    let title = "\(readers) reader\(readers == 1 ? "" : "s")"
    return pace == Runs.pace
      ? (title, "\(readers)")
      : (title + ", a write every \(format(pace, 0)) µs", "\(readers)-light")
  }

  /// The paths' latencies; the first path is the baseline the goals name, the last is ours.
  /// The goals hold for the usual pace; a lighter one shows the path without the wait for a core.
  mutating func latency(readers: Int, writes: Int, pace: Double, _ paths: [Path]) {
    let (title, tag) = latencyName(readers: readers, pace: pace)
    let goals = pace == Runs.pace
    let distributions = paths.map { path in path.samples.map { Distribution($0) } }
    func stat(_ runs: [Distribution], _ p: Double) -> Double {
      median(runs.map { $0.percentile(p) })
    }
    /// The p50 of the fastest and of the slowest reader (medians over runs).
    func order(_ path: Path) -> String {
      let p50s = path.runs.map { $0.latencies.map { Distribution($0).percentile(0.5) } }
      let fastest = median(p50s.map { $0.min() ?? .nan })
      let slowest = median(p50s.map { $0.max() ?? .nan })
      return "\(format(fastest))–\(format(slowest)) µs"
    }
    var rows = [
      "Propagation from the writer's `withLock` (raw: its send) to each reader seeing the value, "
        + "\(writes) writes due every \(format(pace, 0)) µs, \(readers) reader\(readers == 1 ? "" : "s") "
        + "(µs, percentiles by HdrHistogram; each write timed from when it was due, so a writer "
        + "held up counts against the path):",
      "",
      "| path | p50 | p99 | p99.9 |",
      "|---|---:|---:|---:|",
    ]
    for (path, runs) in zip(paths, distributions) {
      rows.append(
        "| \(path.name) | \(format(stat(runs, 0.5))) | \(format(stat(runs, 0.99))) | "
          + "\(format(stat(runs, 0.999))) |")
    }
    let ours = distributions.last!
    rows.append("")
    for (index, (baseline, raw)) in zip(paths, distributions).dropLast().enumerated() {
      let p50 = stat(ours, 0.5) / stat(raw, 0.5)
      let p99 = stat(ours, 0.99) / stat(raw, 0.99)
      rows.append(
        "Against \(baseline.name): p50 **\(format(p50, 2))×**"
          + (index == 0 && goals ? goal(p50, atMost: 1.3) : "") + ", p99 **\(format(p99, 2))×**; per run "
          + "p50 \(spread(zip(ours, raw).map { $0.percentile(0.5) / $1.percentile(0.5) }))×, "
          + "p99 \(spread(zip(ours, raw).map { $0.percentile(0.99) / $1.percentile(0.99) }))×.")
    }
    if readers > 1 {
      rows.append(
        "p50 of the fastest and of the slowest reader: "
          + paths.map { "\($0.chartName) \(order($0))" }.joined(separator: ", ")
          + ". The fastest reader shows what the hops before the readers take; the spread, how "
          + "long the cores take to serve all the readers.")
    }
    if !goals {
      rows.append(
        "The same readers with writes \(format(pace / Runs.pace, 0))× further apart than above: "
          + "with the cores less busy, a reader seldom waits for one, so this shows what the path "
          + "takes rather than how the machine's queue for its cores grows with the CPU spent.")
    }
    rows += ["", "![latency distribution, \(title)](latency-\(tag).png)"]
    section("Latency, \(title)", rows)
    // Every run's samples together, one block per path.
    // The first line titles the chart (Scripts/latency.gnuplot reads it; gnuplot's data skips it).
    var lines = ["# \(title)"]
    for (path, runs) in zip(paths, distributions) {
      var all = runs.first
      for run in runs.dropFirst() { all!.add(run) }
      // The block's first line names it (gnuplot's `columnheader`).
      lines += ["\"\(path.chartName)\""] + (all?.chartLines() ?? []) + ["", ""]
    }
    chart("latency-\(tag).dat", lines)
  }

  /// Where the CPU time of the latency runs went, per write: with 8 readers on 2 cores, how busy
  /// the machine is decides how long each reader waits for a core.
  mutating func cpu(readers: Int, writes: Int, pace period: Double, _ paths: [Path]) {
    let (title, _) = latencyName(readers: readers, pace: period)
    let goals = period == Runs.pace
    let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
    func perWrite(_ path: Path, _ figure: (Runs.PathRun) -> Double) -> Double {
      median(path.runs.map { figure($0.run) }) / Double(writes)
    }
    func total(_ run: Runs.PathRun) -> Double { run.writerCPU + run.brokerCPU + run.readersCPU }
    var rows = [
      "CPU time per write in the latency runs above (µs, user + system, from /proc; a clock tick "
        + "is 10 ms, so about 1 µs per write), and how busy that keeps \(format(cores, 0)) cores "
        + "at one write every \(format(period, 0)) µs"
        + (goals
          ? ":"
          : ". Every path spends more per write than at \(format(Runs.pace, 0)) µs: with writes "
            + "this far apart each one wakes every process by itself (a poll, a context switch, "
            + "cold caches), where closer writes often share a wake-up:"),
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
      let totalRatio = perWrite(ours, total) / perWrite(baseline, total)
      let readersRatio = perWrite(ours, \.readersCPU) / perWrite(baseline, \.readersCPU)
      rows.append(
        "Against \(baseline.name): total **\(format(totalRatio, 2))×**"
          + (index == 0 && goals ? goal(totalRatio, atMost: 1.6) : "")
          + " (per run \(spread(perRun))×), readers **\(format(readersRatio, 2))×**"
          + (index == 0 && goals ? goal(readersRatio, atMost: 1.5) : "")
          + " (per run \(spread(readersPerRun))×).")
    }
    section("CPU per write, \(title)", rows)
  }

  mutating func throughput(writes: Int, ours: [Runs.ThroughputRun], raw: [Runs.ThroughputRun]) {
    func middle(_ runs: [Runs.ThroughputRun], _ figure: (Runs.ThroughputRun) -> Double) -> Double {
      median(runs.map(figure))
    }
    let rawWrites = middle(raw, \.writes)
    let ourWrites = middle(ours, \.writes)
    func row(_ name: String, _ runs: [Runs.ThroughputRun]) -> String {
      let figures = [
        middle(runs, \.writes), middle(runs) { Double($0.published) },
        middle(runs) { Double($0.seen) },
      ]
      return "| \(name) | " + figures.map { format($0, 0) }.joined(separator: " | ") + " |"
    }
    section(
      "Throughput, one writer, 8 subscribers",
      [
        "The writer makes \(writes) writes as fast as it can (`withLock` on ours); the run ends when "
          + "every reader has seen the last one.",
        "",
        "| path | writes/s reaching all 8 | distinct values sent out | distinct values a subscriber saw |",
        "|---|---:|---:|---:|",
        row("raw libzmq", raw),
        row("SharedMirror `.broker`", ours),
        "",
        "Writes reaching everyone: **\(format(ourWrites / rawWrites, 2))×** raw"
          + "\(goal(ourWrites / rawWrites, atLeast: 0.5)). "
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
    let ours = ours.map { Distribution($0) }
    let raw = raw.map { Distribution($0) }
    func stat(_ runs: [Distribution], _ p: Double) -> Double {
      median(runs.map { $0.percentile(p) })
    }
    let ratio = stat(ours, 0.5) / stat(raw, 0.5)
    section(
      "Staleness under flat-out writes, \(readers) subscribers",
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
          + "\(spread(zip(ours, raw).map { $0.percentile(0.5) / $1.percentile(0.5) }))×.",
      ])
  }

  mutating func contention(four: [(Double, Int)], one: [(Double, Int)]) {
    let ratio = median(four.map(\.0)) / median(one.map(\.0))
    let exact = (four + one).allSatisfy { $0.1 == 40_000 }
    section(
      "Contention, 40,000 `withLock` increments",
      [
        "| writers | wall time until confirmed (s) | final count |",
        "|---|---:|---:|",
        "| 1 `counter` process, +x40000 | \(format(median(one.map(\.0)), 2)) | \(one.map { String($0.1) }.joined(separator: ", ")) |",
        "| 4 `counter` processes, +x10000 each | \(format(median(four.map(\.0)), 2)) | \(four.map { String($0.1) }.joined(separator: ", ")) |",
        "",
        "Ratio 4 writers / 1 writer: **\(format(ratio, 2))×**\(goal(ratio, atMost: 2)). Every result exactly "
          + "40,000: **\(exact ? "yes" : "NO")**. Per run (noise): "
          + "\(spread(zip(four, one).map { $0.0 / $1.0 }))×.",
      ])
  }

  mutating func scale(_ runs: [(Int, [Double], [Double])]) {
    let gets = runs.map { Distribution($0.1) }
    let joins = runs.map { Distribution($0.2) }
    func stat(_ runs: [Distribution], _ p: Double, _ digits: Int = 1) -> String {
      "\(format(median(runs.map { $0.percentile(p) }), digits)) "
        + "(\(spread(runs.map { $0.percentile(p) }, digits)))"
    }
    section(
      "Broker scale: 100,000 keys, 100 connected clients",
      [
        "| measure | value |",
        "|---|---:|",
        "| broker resident memory (per run) | \(format(median(runs.map { Double($0.0) }) / 1024, 1)) MiB "
          + "(\(spread(runs.map { Double($0.0) / 1024 }, 1))) |",
        "| GET snapshot round trip, p50 / p99 (per run) | \(stat(gets, 0.5)) / \(stat(gets, 0.99)) µs |",
        "| late joiner, new client to synced key, p50 / p99 (per run) | \(stat(joins, 0.5, 2)) / \(stat(joins, 0.99, 2)) ms |",
      ])
  }

  /// The permissions section: per shape of broker, the broker's CPU per write of each run.
  mutating func permissions(writes: Int, pace: Double, _ runs: [Runs.AllowListShape: [Double]]) {
    let shapes = Runs.AllowListShape.allCases
    let one = runs[.oneKey] ?? [], thousand = runs[.thousandKeys] ?? []
    let ratio = median(thousand) / median(one)
    section(
      "What the permission check costs the broker",
      [
        "One CURVE writer, \(writes) writes \(format(pace, 0)) µs apart on one key, no readers; the "
          + "broker's CPU per write. Each request is checked against the writer's permissions "
          + "(the list's entry for its key, then its patterns).",
        "",
        "| broker | broker CPU per write (µs) |",
        "|---|---:|",
      ] + shapes.map { shape in
        "| \(shape.name) | \(format(median(runs[shape] ?? []), 1)) |"
      } + [
        "",
        "1,000 keys with patterns against 1 key: **\(format(ratio, 2))×**, "
          + "a difference of \(format((ratio - 1) * 100, 1))%"
          + goal((ratio - 1) * 100, atMost: 5, unit: "%")
          + ". Per run (noise): \(spread(zip(thousand, one).map { $0 / $1 }))×.",
      ])
  }

  mutating func durability(with: [Double], without: [Double], etcd: [Double]) {
    chart(
      "durability.dat",
      [
        "# broker, then µs per confirmed write (median over the runs)",
        "\"in memory\" \(format(1e6 / median(without)))",
        "\"--data\" \(format(1e6 / median(with)))",
        "\"--store etcd\" \(format(1e6 / median(etcd)))",
      ])
    section(
      "Durability cost",
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
        "",
        "![µs per confirmed write by broker](durability.png)",
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

  mutating func cluster(_ rows: [ClusterRow], election runs: [(run: Runs.WriterRun, elected: Double)]) {
    let election = runs.map(\.run)
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
    let pings = Distribution(rows.flatMap(\.pings))
    let electionPings = Distribution(election.flatMap(\.pings))
    let exact = election.allSatisfy { $0.acknowledged == $0.versions }
    let refused = election.map(\.refusals).reduce(into: [:]) { $0.merge($1, uniquingKeysWith: +) }
    lines += [
      "",
      "Heartbeats (`PING` every 20 ms on a connection of its own) while the writers' transactions "
        + "are out: p50 \(format(pings.percentile(0.5), 2)) ms, p99 \(format(pings.percentile(0.99), 2)) ms, "
        + "slowest \(format(pings.max, 2)) ms. With etcd's leader SIGKILLed under 4 writers on one "
        + "key (\(election.count) runs): slowest \(format(electionPings.max, 2)) ms (a client moves "
        + "after \(BrokerClient.Configuration().heartbeatInterval * BrokerClient.Configuration().missedHeartbeats) of silence), \(election.map(\.unavailable).reduce(0, +)) answered `unavailable` "
        + "(a client moves at once); every write counted once: \(exact ? "yes" : "**no**") "
        + "(\(election.map(\.acknowledged).reduce(0, +)) acknowledged). Writes refused: "
        + "\(refused.isEmpty ? "none" : refused.sorted { $0.key < $1.key }.map { "\($0.value) `\($0.key)`" }.joined(separator: ", ")). "
        + "etcd elected a new leader \(format(median(runs.map(\.elected)), 0)) ms after the kill "
        + "(median; \(spread(runs.map(\.elected), 0)) ms), and no writer got an `ACK` for "
        + "\(format(median(election.map(\.longestPause)), 0)) ms (median; \(spread(election.map(\.longestPause), 0)) ms): "
        + "so writes resumed a median "
        + "\(format(median(zip(election, runs).map { $0.longestPause - $1.elected }), 0)) ms "
        + "after etcd had a leader again (per run \(spread(zip(election, runs).map { $0.longestPause - $1.elected }, 0)) ms).",
    ]
    lines += ["", "![a cluster on etcd](cluster.png)"]
    section("A cluster on etcd", lines)
    chart(
      "cluster.dat",
      rows.map {
        "\"\($0.writers) on \($0.keys)\" \(median($0.broker)) \(median($0.etcd)) \(median($0.single))"
      })
  }

  mutating func shortLived(
    _ run: (sizes: (first: Int, last: Int), latencies: (first: Double, last: Double))
  ) {
    section(
      "A key written by 10,000 short-lived clients",
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
    section("Compare-and-set from Python, against Redis", lines)
  }

  mutating func failover(_ runs: [[Double]]) {
    let all = Distribution(runs.flatMap { $0 })
    section(
      "Fail-over",
      [
        "Two brokers on a 3-member etcd cluster; a client given both. The broker it talks to is "
          + "SIGKILLed; the time from the kill until a write made right after it is confirmed "
          + "through the other broker (\(all.count) fail-overs, \(runs.count) runs):",
        "",
        "| p50 | p99 | slowest |",
        "|---:|---:|---:|",
        "| \(format(all.percentile(0.5))) ms | \(format(all.percentile(0.99))) ms | \(format(all.max)) ms |",
        "",
        "Median per run (noise): \(runs.map { format(Distribution($0).percentile(0.5)) }.joined(separator: ", ")) ms.",
      ])
  }

  mutating func webFront(_ runs: [Runs.WebFrontRun]) {
    func stat(_ path: (Runs.WebFrontRun) -> [Double], _ p: Double) -> [Double] {
      runs.map { Distribution(path($0)).percentile(p) }
    }
    func row(_ name: String, _ path: (Runs.WebFrontRun) -> [Double]) -> String {
      let p50 = stat(path, 0.5)
      return "| \(name) | \(format(median(p50), 2)) ms | \(format(median(stat(path, 0.99)), 2)) ms "
        + "| \(spread(p50)) ms |"
    }
    /// Per run, a path's p50 and p99 over its baseline's.
    func ratios(_ path: (Runs.WebFrontRun) -> [Double], over baseline: (Runs.WebFrontRun) -> [Double])
      -> (p50: [Double], p99: [Double])
    {
      (
        zip(stat(path, 0.5), stat(baseline, 0.5)).map { $0 / $1 },
        zip(stat(path, 0.99), stat(baseline, 0.99)).map { $0 / $1 }
      )
    }
    func ratioRow(_ name: String, _ ratios: (p50: [Double], p99: [Double])) -> String {
      "| \(name) | **\(format(median(ratios.p50), 2))×** | **\(format(median(ratios.p99), 2))×** | "
        + "\(spread(ratios.p50))× |"
    }
    func verdict(_ ratios: [Double]) -> String { median(ratios) <= 1.5 ? "met" : "not met" }
    let tab = ratios(\.tab, over: \.terminal)
    let front = ratios(\.sameOverWebSocket, over: \.sameOverZeroMQ)
    let paths: [(String, (Runs.WebFrontRun) -> [Double])] = [
      ("terminal client", \.terminal), ("tab via web", \.tab),
      ("protocol client", \.sameOverZeroMQ), ("protocol client via web", \.sameOverWebSocket),
    ]
    chart(
      "web.dat",
      ["# path, then ms for p50 and p99 (medians over the runs)"]
        + paths.map { name, path in
          "\"\(name)\" \(format(median(stat(path, 0.5)), 3)) \(format(median(stat(path, 0.99)), 3))"
        })
    section(
      "Web front",
      [
        "A tap → the new value printed by a terminal `profile --print json` (its output line "
          + "timed as the harness reads it), \(Runs.webTaps) taps \(Runs.webPace) ms apart per "
          + "path and run, all through one broker, one path after the other in each run:",
        "",
        "- a tab in headless Chromium tapping the page's + button, through `web` (the page times "
          + "its taps on its wall clock, which Chromium takes from the machine's; read against it "
          + "over loopback, it differed by a median \(format(median(runs.map { abs($0.clockOffset) }) / 1_000, 2)) ms; "
          + "a reading is good to ± half its \(format(median(runs.map(\.clockRoundTrip)) / 1_000, 2)) ms "
          + "round trip), against a terminal client in a process of its own making the same mutation "
          + "as `counter`'s +;",
        "- one protocol client (a Python script that waits for each tap's `ACK`) sending the same "
          + "frames straight to the broker over ZeroMQ, and through `web` over a WebSocket as a "
          + "tab does: the same client both ways, so the ratio is the front's own cost.",
        "",
        "| path | p50 | p99 | spread of p50 over the runs |",
        "|---|---:|---:|---:|",
        row("terminal client → profile", \.terminal),
        row("tab → `web` → profile", \.tab),
        ratioRow("tab over terminal client", tab),
        row("protocol client → profile (ZeroMQ)", \.sameOverZeroMQ),
        row("protocol client → `web` → profile (WebSocket)", \.sameOverWebSocket),
        ratioRow("WebSocket over ZeroMQ, same client", front),
        "",
        "![a tap to the profile by path](web.png)",
        "",
        "Goal: p50 and p99 at most 1.5× the terminal client's: p50 **\(verdict(tab.p50))**, "
          + "p99 **\(verdict(tab.p99))**. The front's own cost, the same client over its WebSocket "
          + "against over ZeroMQ, is the second ratio (\(format(median(front.p50), 2))× at p50).",
        "",
        "CPU per update while \(Runs.webTabs) tabs watch \(Runs.webUpdates) taps of a terminal "
          + "client (4 ms apart; an update per applied write): `web` "
          + "**\(format(median(runs.map(\.frontPerTab)))) µs per update per tab** "
          + "(spread \(spread(runs.map(\.frontPerTab), 1))), against "
          + "\(format(median(runs.map(\.profile)))) µs per update for a terminal `profile` "
          + "(spread \(spread(runs.map(\.profile), 1))): a tab costs the machine "
          + "\(format(median(runs.map(\.frontPerTab)) / median(runs.map(\.profile)), 2))× what a "
          + "terminal client costs (no goal is set; it is here so a change that makes the front "
          + "dearer shows). The front relays each tab's messages as WebSocket text; the browser's "
          + "own CPU is not counted.",
      ])
  }

  /// One row of the clients' table: per run, the raw forwarder's and the broker's.
  struct ClientsRow {
    let clients: Int
    var raw: [Runs.ClientsRun] = []
    var ours: [Runs.ClientsRun] = []
  }

  mutating func clients(_ rows: [ClientsRow]) {
    func stat(_ runs: [Runs.ClientsRun], _ p: Double) -> Double {
      median(runs.map { Distribution($0.latencies).percentile(p) })
    }
    func ratios(_ row: ClientsRow, _ figure: (Runs.ClientsRun) -> Double) -> [Double] {
      zip(row.ours, row.raw).map { figure($0) / figure($1) }
    }
    var lines = [
      "Clients connected to one broker, each a DEALER that said `HELLO` and sends a `PING` every "
        + "\(BrokerClient.Configuration().heartbeatInterval) (the default heartbeat) and a SUB "
        + "connection on the key, spread over 4 client "
        + "processes; beside them, in the same run, a raw libzmq forwarder process (ROUTER in, PUB "
        + "out, answering each write; its messages carry the six frames of the broker's `UPDATE`) "
        + "with as many silent DEALER and SUB connections. A writer of "
        + "its own makes \(ManyClients.writes) writes, due "
        + rows.map { "\(Int(ManyClients.pace(clients: $0.clients))) ms" }.joined(separator: ", ")
        + " apart (at " + rows.map { "\($0.clients)" }.joined(separator: ", ")
        + " clients: wider than a write's fan-out); each is timed from when it was due until the "
        + "last subscription got it (ms). CPU per write is the server's, less what heartbeats "
        + "take in the same time.",
      "",
      "| clients | all synced | p50, ours / raw | p99, ours / raw | CPU per write, ours / raw (µs) | heartbeats, share of a core | memory per client, ours / raw |",
      "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows {
      let synced = (row.ours + row.raw).allSatisfy(\.synced)
      let p50 = ratios(row) { Distribution($0.latencies).percentile(0.5) }
      let p99 = ratios(row) { Distribution($0.latencies).percentile(0.99) }
      let cpu = ratios(row, \.cpuPerWrite)
      lines.append(
        "| \(row.clients) | \(synced ? "yes" : "**no**") | "
          + "\(format(stat(row.ours, 0.5))) / \(format(stat(row.raw, 0.5))) (**\(format(median(p50), 2))×**, \(spread(p50))) | "
          + "\(format(stat(row.ours, 0.99))) / \(format(stat(row.raw, 0.99))) (**\(format(median(p99), 2))×**, \(spread(p99))) | "
          + "\(format(median(row.ours.map(\.cpuPerWrite)), 0)) / \(format(median(row.raw.map(\.cpuPerWrite)), 0)) "
          + "(**\(format(median(cpu), 2))×**, \(spread(cpu))) | "
          + "\(format(100 * median(row.ours.map(\.heartbeatCore)), 1))% | "
          + "\(format(median(row.ours.map(\.kilobytesPerClient)), 0)) / "
          + "\(format(median(row.raw.map(\.kilobytesPerClient)), 0)) KiB |")
    }
    let idle = rows.flatMap { $0.ours.map(\.idleTicks) }
    let mostTicks = idle.max() ?? 0
    lines += [""]
    if let largest = rows.last {
      let figures = [
        ("p50", median(ratios(largest) { Distribution($0.latencies).percentile(0.5) })),
        ("p99", median(ratios(largest) { Distribution($0.latencies).percentile(0.99) })),
        ("CPU per write", median(ratios(largest, \.cpuPerWrite))),
      ]
      let heartbeats = 100 * median(largest.ours.map(\.heartbeatCore))
      lines.append(
        "Goals at \(largest.clients) clients: "
          + figures.map { "\($0.0) \(format($0.1, 2))× raw's\(goal($0.1, atMost: 1.1))" }
            .joined(separator: ", ")
          + ", heartbeats \(format(heartbeats, 1))% of a core\(goal(heartbeats, atMost: 10, unit: "%")).")
    }
    lines.append(
      "With nothing connected the broker used \(mostTicks) CPU \(mostTicks == 1 ? "tick" : "ticks") "
        + "(10 ms each) in 2 s at most (every run: \(idle.map(String.init).joined(separator: ", "))).")
    if let largest = rows.last {
      // What bounds one broker on a bigger machine, from this run's figures.
      let heartbeatPerClient = median(largest.ours.map(\.heartbeatCore)) / Double(largest.clients)
      let fanOutPerClient = median(largest.ours.map(\.cpuPerWrite)) / Double(largest.clients)
      let memory = median(largest.ours.map(\.kilobytesPerClient))
      lines += [
        "",
        "Beyond \(largest.clients): per client, heartbeats take \(format(heartbeatPerClient * 1e6, 2)) µs "
          + "of broker CPU per second (a core holds about \(format(1 / heartbeatPerClient / 1000, 0)),000 "
          + "clients' heartbeats), each write's fan-out \(format(fanOutPerClient, 2)) µs (one write per second "
          + "to 100,000 clients would take \(format(fanOutPerClient * 100_000 / 1e4, 0))% of a core; the "
          + "broker's one thread serves it all), memory \(format(memory, 0)) KiB "
          + "(100,000 clients: \(format(memory * 100_000 / 1_048_576, 1)) GiB), and two open files, so "
          + "the open-file limit (`capacity=` in the broker's log) bounds it first on most systems.",
      ]
    }
    lines += ["", "![thousands of clients](clients.png)"]
    section("Thousands of clients on one broker", lines)
    chart(
      "clients.dat",
      rows.map {
        "\($0.clients) \(stat($0.ours, 0.5)) \(stat($0.raw, 0.5)) \(stat($0.ours, 0.99)) "
          + "\(stat($0.raw, 0.99))"
      })
  }

  /// `Store.send` and its reducers, from the percentile files of ordo-one's benchmark package
  /// (`swift package benchmark --format histogramPercentiles`, which `make bench` runs first).
  mutating func storeSend(from directory: String) {
    let cases: [(name: String, baseline: String)] = [
      ("trivial reducer, called directly", "trivial reducer, called directly"),
      ("trivial reducer, Store.send", "trivial reducer, called directly"),
      ("5 nested Scopes, called directly", "5 nested Scopes, called directly"),
      ("5 nested Scopes, Store.send", "5 nested Scopes, called directly"),
      ("@ObservableState trivial reducer, called directly", "trivial reducer, called directly"),
      ("@ObservableState trivial reducer, Store.send", "trivial reducer, called directly"),
      ("@ObservableState 5 nested Scopes, Store.send", "5 nested Scopes, called directly"),
    ]
    /// The value at a percentile of a benchmark's metric, per action.
    func figure(_ name: String, _ metric: String, _ percentile: Int) -> Double? {
      let file =
        "\(directory)/Current_run.ComposableBenchmarks."
        + name.replacingOccurrences(of: " ", with: "_") + ".\(metric).histogram.percentiles.tsv"
      guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
      for line in text.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: "\t")
        if fields.count == 2, Int(fields[0]) == percentile { return Double(fields[1]) }
      }
      return nil
    }
    guard let trivial = figure("trivial reducer, Store.send", "wallClock", 50) else {
      section(
        "Store.send",
        [
          "Not measured: no results of `swift package benchmark` in `\(directory)` "
            + "(`make bench` makes them before this harness runs)."
        ])
      return
    }
    var rows = [
      "Each action on the main actor, a million per sample, measured by ordo-one's `benchmark` "
        + "package (its samples give the spread: p50 and p99 over them; time in whole ns), "
        + "with the same reducer called directly in the same run:",
      "",
      "| case | ns per action, p50 | p99 | allocations per action | over the direct call, p50 |",
      "|---|---:|---:|---:|---:|",
    ]
    var bars = ["# case, then ns per action at p50 and p99"]
    for (name, baseline) in cases {
      let p50 = figure(name, "wallClock", 50) ?? .nan
      let direct = figure(baseline, "wallClock", 50) ?? .nan
      bars.append(
        "\"\(name)\" \(format(p50, 0)) \(format(figure(name, "wallClock", 99) ?? .nan, 0))")
      rows.append(
        "| \(name) | \(format(p50, 0)) | \(format(figure(name, "wallClock", 99) ?? .nan, 0)) | "
          + "\(format(figure(name, "mallocCountTotal", 50) ?? .nan, 0)) | "
          + (name == baseline
            ? "—" : "\(p50 < direct ? "−" : "+")\(format(abs(p50 - direct), 0)) ns") + " |")
    }
    rows += [
      "",
      "The last column compares each row with the plain reducer (no `@ObservableState`) called "
        + "directly: the `@ObservableState` rows include what observation adds to the state.",
      "",
      "![ns per action by case](store-send.png)",
      "",
      "Goal: a trivial `Store.send` under 500 ns: \(format(trivial, 0)) ns, "
        + "**\(trivial < 500 ? "met" : "not met")**.",
    ]
    chart("store-send.dat", bars)
    section("Store.send", rows)
  }

  /// Writes `RESULTS.md` (the header, then every section) and the charts' data files.
  func write() throws {
    let header = [
      "# Benchmarks",
      "",
      "Written whole by the harness from one run; nothing in it is edited by hand.",
      "",
      "- **Commit:** \(commit)",
      "- **Date:** \(ISO8601DateFormatter().string(from: started)) (start of the run)",
      "- **Machine:** \(Self.machine())",
      "- **Command:** `\(command)`"
        + (selected ? "" : " (`make bench`: after `swift package benchmark` for `Store.send`)"),
      "- **Sections:** " + (selected ? "only " : "all: ") + sections.joined(separator: ", "),
      "- **Runs:** every figure is the median of \(runs) runs, each baseline measured in the same "
        + "run, with the spread over the runs beside it. A ratio is the median of the runs' ratios "
        + "(each run against its own baseline), so it can differ from the ratio of two medians in "
        + "a table. The latency charts pool every run's samples. Readers, writers and brokers are separate "
        + "processes on loopback TCP, except the writer of the latency and throughput runs, which "
        + "is the harness itself.",
      "",
    ]
    try (header + markdown).joined(separator: "\n")
      .write(toFile: "RESULTS.md", atomically: true, encoding: .utf8)
    for (file, lines) in charts {
      try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
    }
  }

  /// The commit the benchmarks were built from, and whether the tree had other changes.
  private static func currentCommit() -> String {
    let head = output("/usr/bin/git", ["rev-parse", "--short=12", "HEAD"]) ?? "unknown"
    // Files this run writes do not count.
    let changed = (output("/usr/bin/git", ["status", "--porcelain", "--", "..", ":!*.png", ":!RESULTS.md"]) ?? "")
      .split(separator: "\n")
    return "`\(head)`" + (changed.isEmpty ? "" : " with \(changed.count) uncommitted change(s)")
  }

  /// Cores, CPU model, memory and kernel.
  private static func machine() -> String {
    let info = ProcessInfo.processInfo
    let cpu =
      (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
      .split(separator: "\n").first { $0.hasPrefix("model name") }?
      .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
    let kernel = output("/usr/bin/uname", ["-r"]) ?? "unknown"
    return "\(info.activeProcessorCount) cores (\(cpu)), \(info.physicalMemory >> 30) GiB, "
      + "Linux \(kernel)"
  }
}

/// What a command prints, trimmed; `nil` if it fails.
func output(_ executable: String, _ arguments: [String]) -> String? {
  let (process, pipe) = pipedProcess(executable, arguments)
  guard (try? process.run()) != nil else { return nil }
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  guard process.terminationStatus == 0 else { return nil }
  return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
