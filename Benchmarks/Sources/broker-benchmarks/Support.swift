import Foundation
import Histogram
import SharedBroker
import Synchronization
import ZeroMQ

/// Nanoseconds on CLOCK_MONOTONIC: the same clock in every process of this machine, so a writer
/// process and a reader process can compare timestamps.
func now() -> UInt64 {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC, &time)
  return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Sleeps the thread (`Task.sleep` is far coarser than the pacing the latency runs need). It does
/// not spin: a spinning writer would take one of the two cores away from the path it measures.
func pause(microseconds: UInt64) {
  var request = timespec(
    tv_sec: Int(microseconds / 1_000_000), tv_nsec: Int(microseconds % 1_000_000 * 1_000))
  var remaining = timespec()
  while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// Sleeps the thread until `deadline` (nanoseconds on CLOCK_MONOTONIC, as ``now()``); returns at
/// once if it has passed.
func pause(until deadline: UInt64) {
  var target = timespec(
    tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
  while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
}

/// CPU time (user + system, all threads, exited ones included) a process has used so far, in µs,
/// from `/proc/PID/stat`; its resolution is a clock tick (10 ms).
func cpuMicroseconds(pid: Int32 = getpid()) -> Double {
  let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
  // The fields after the command name, which is in parentheses and may contain spaces.
  let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
  guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
    return 0
  }
  return (user + system) * 1e6 / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A distribution of samples (µs or ms, any sign), kept by HdrHistogram to 3 significant
/// digits of each sample's distance from the smallest one.
struct Distribution {
  private(set) var histogram = Histogram<UInt64>(
    highestTrackableValue: 3_600_000_000_000, numberOfSignificantValueDigits: .three)
  /// The smallest sample: staleness can be negative, a histogram's values cannot.
  private let base: Double
  /// Samples are recorded in thousandths of their unit.
  private static let scale = 1_000.0

  init(_ samples: [Double]) {
    base = min(samples.min() ?? 0, 0)
    for sample in samples { _ = histogram.record(UInt64(((sample - base) * Self.scale).rounded())) }
  }

  var isEmpty: Bool { histogram.totalCount == 0 }
  var count: Int { Int(histogram.totalCount) }

  /// The value at or below which `p` (0...1) of the samples lie.
  func percentile(_ p: Double) -> Double {
    guard !isEmpty else { return .nan }
    return Double(histogram.valueAtPercentile(p * 100)) / Self.scale + base
  }

  var max: Double { isEmpty ? .nan : Double(histogram.max) / Self.scale + base }

  /// Adds another run's samples.
  mutating func add(_ other: Distribution) {
    guard other.base >= base else {
      var merged = other
      merged.add(self)
      self = merged
      return
    }
    if other.base == base {
      histogram.add(other.histogram)
    } else {
      let shift = UInt64(((other.base - base) * Self.scale).rounded())
      for value in other.histogram.recordedValues() {
        _ = histogram.record(value.value + shift, count: value.count)
      }
    }
  }

  /// The percentile distribution for a chart: per line, the percentile (0–100), `1/(1-p)` (the
  /// x axis of HdrHistogram's plots) and the value.
  func chartLines() -> [String] {
    histogram.percentiles(ticksPerHalfDistance: 5).map { step in
      let fraction = step.percentileLevelIteratedTo / 100
      let inverse = fraction < 1 ? 1 / (1 - fraction) : 1_000_000
      return "\(step.percentileLevelIteratedTo) \(inverse) \(Double(step.value) / Self.scale + base)"
    }
  }
}

/// The median of a handful of per-run figures (not a distribution: those go in a
/// ``Distribution``).
func median(_ values: [Double]) -> Double {
  guard !values.isEmpty else { return .nan }
  let sorted = values.sorted()
  return sorted.count % 2 == 1
    ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ value: Double, _ digits: Int = 1) -> String {
  String(format: "%.\(digits)f", value)
}

/// A process of `executable`, not started yet, whose output goes to the returned pipe and whose
/// errors go nowhere.
func pipedProcess(_ executable: String, _ arguments: [String]) -> (Process, Pipe) {
  let process = Process()
  let pipe = Pipe()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  process.standardOutput = pipe
  process.standardError = FileHandle.nullDevice
  return (process, pipe)
}

/// A child process whose output is collected line by line.
final class Child: @unchecked Sendable {
  let process = Process()
  private let pipe = Pipe()
  private let lock = NSLock()
  private var buffer = Data()

  /// Starts `executable`; with `collectingErrors`, what it writes to standard error (where the
  /// programs log) is collected with its output.
  init(_ executable: String, _ arguments: [String], collectingErrors: Bool = false) throws {
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = pipe
    process.standardError = collectingErrors ? pipe : FileHandle.standardError
    pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
      let data = handle.availableData
      self?.lock.withLock { self?.buffer.append(data) }
    }
    try process.run()
  }

  var output: String { lock.withLock { String(decoding: buffer, as: UTF8.self) } }

  /// Waits (up to `timeout` seconds) until the output contains `text`.
  func wait(for text: String, timeout: Double = 30) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while !output.contains(text) {
      guard Date() < deadline, process.isRunning || output.contains(text) else {
        throw BenchmarkError(
          "child \(process.arguments ?? []) never printed \"\(text)\":\n\(output)")
      }
      usleep(2_000)
    }
  }

  /// Waits for the process to exit and for every byte it printed.
  func finish() -> String {
    process.waitUntilExit()
    pipe.fileHandleForReading.readabilityHandler = nil
    let rest = pipe.fileHandleForReading.readDataToEndOfFile()
    lock.withLock { buffer.append(rest) }
    return output
  }

  func stop() {
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
  }

  /// Ends the child with SIGKILL: no graceful shutdown (an etcd leader that stops gracefully
  /// hands its lead over first, which skips the election).
  func kill() {
    if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
  }
}

struct BenchmarkError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// The broker executable on free loopback ports (or on the endpoints of an earlier one).
final class BrokerProcess {
  let child: Child
  let router: String
  let publisher: String

  init(
    bin: String, extra: [String] = [], listen: String = "tcp://127.0.0.1:*",
    publish: String = "tcp://127.0.0.1:*"
  ) throws {
    child = try Child(
      "\(bin)/broker",
      // No seed window: a broker just started has lost nothing, and the runs write at once.
      ["--listen", listen, "--publish", publish, "--log-level", "info", "--seed-window", "0"]
        + extra
    )
    try child.wait(for: "Broker listening")
    let output = child.output
    let fields = output.split(separator: " ")
    func field(_ name: String) throws -> String {
      guard let field = fields.first(where: { $0.hasPrefix("\(name)=") }) else {
        throw BenchmarkError("no \(name) endpoint in: \(output)")
      }
      return String(field.dropFirst(name.count + 1))
    }
    router = try field("router")
    publisher = try field("publisher")
  }

  /// Ends the broker as a crash would.
  func kill() {
    Glibc.kill(child.process.processIdentifier, SIGKILL)
    child.process.waitUntilExit()
  }

  var residentKilobytes: Int { residentMemory(pid: child.process.processIdentifier) }

  /// A DEALER that speaks the wire protocol itself, connected and past `HELLO` as `client`.
  /// `options` are set before it connects (libzmq copies them at `connect`).
  func dealer(
    in context: Context, client: String, options: (Socket) throws -> Void = { _ in }
  ) throws -> Socket {
    let dealer = try Socket(context: context, type: .dealer)
    try options(dealer)
    try dealer.connect(router)
    try dealer.send(BrokerMessage.hello(client: client).frames)
    _ = try dealer.receive()
    return dealer
  }

  /// The version the broker holds for `key`: how many writes it applied to it, since each applied
  /// write adds one.
  func version(of key: String) throws -> UInt64 {
    let context = try Context()
    defer { context.terminate() }
    let probe = try dealer(in: context, client: "bench-probe") {
      try $0.set(.receiveTimeout, 5_000)
    }
    defer { probe.close() }
    try probe.send(BrokerMessage.get(client: "bench-probe", key: key).frames)
    guard let frames = try probe.receive(),
      case .snapshot(_, let version, _, _, _) = try BrokerMessage(frames: frames)
    else { throw BenchmarkError("the broker did not answer a GET for \"\(key)\"") }
    return version
  }

  func stop() { child.stop() }
}

/// A 3-member etcd cluster (Debian's `etcd-server`) on loopback, in a temporary directory.
final class EtcdProcesses {
  private var members: [Child] = []
  private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-etcd-\(UUID())")
  /// The brokers' `--store`.
  let store: String

  init(members count: Int = 3) throws {
    // Ports the kernel picks: ZeroMQ sockets bound to `*` say which, and give them back, all
    // at once (one closed before the next binds may be handed out again).
    let context = try Context()
    defer { context.terminate() }
    var sockets: [Socket] = []
    var ports: [String] = []
    for _ in 0..<(2 * count) {
      let socket = try Socket(context: context, type: .pair)
      sockets.append(socket)
      try socket.bind("tcp://127.0.0.1:*")
      ports.append(String(try socket.lastEndpoint.split(separator: ":").last ?? ""))
    }
    for socket in sockets { socket.close() }
    let peers = (0..<count).map { "m\($0)=http://127.0.0.1:\(ports[2 * $0 + 1])" }
    store = "etcd://" + (0..<count).map { "127.0.0.1:\(ports[2 * $0])" }.joined(separator: ",")
    for index in 0..<count {
      let client = "http://127.0.0.1:\(ports[2 * index])"
      let peer = "http://127.0.0.1:\(ports[2 * index + 1])"
      members.append(
        try Child(
          "/usr/bin/etcd",
          [
            "--name", "m\(index)", "--data-dir", directory.appendingPathComponent("m\(index)").path,
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", peers.joined(separator: ","), "--max-request-bytes", "4194304",
            "--logger", "zap", "--log-outputs", "stdout",
          ]))
    }
    do {
      // Published through Raft: the cluster has a leader and this member serves.
      for member in members { try member.wait(for: "published local member to cluster") }
    } catch {
      stop()
      throw error
    }
  }

  /// SIGKILLs the member that leads (the one that last said it became the leader, at the
  /// highest term), and returns how long the others took to elect a new leader (ms, until one
  /// of them says it became the leader at a later term).
  func killLeader() throws -> Double {
    let terms = members.map { Self.leaderTerm(in: $0.output) }
    guard let (index, term) = terms.enumerated().compactMap({ index, term in term.map { (index, $0) } })
      .max(by: { $0.1 < $1.1 })
    else { throw BenchmarkError("no etcd member says it became the leader") }
    let killed = now()
    members[index].kill()
    let others = members.indices.filter { $0 != index }.map { members[$0] }
    let deadline = killed + 30_000_000_000
    while !others.contains(where: { Self.leaderTerm(in: $0.output) ?? 0 > term }) {
      guard now() < deadline else { throw BenchmarkError("no etcd member took over the lead") }
      usleep(1_000)
    }
    return Double(now() - killed) / 1e6
  }

  /// The term of the last "became leader at term N" in a member's log.
  private static func leaderTerm(in output: String) -> Int? {
    guard let range = output.range(of: "became leader at term ", options: .backwards) else { return nil }
    return Int(output[range.upperBound...].prefix { $0.isNumber })
  }

  func stop() {
    for member in members { member.stop() }
    try? FileManager.default.removeItem(at: directory)
  }
}
