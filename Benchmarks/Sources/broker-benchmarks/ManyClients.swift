import Foundation
import SharedBroker
import ZeroMQ

/// Thousands of connected clients on one broker, or on a raw libzmq forwarder process, spread
/// over client processes. Each client is a DEALER (on the broker it says `HELLO` and sends a
/// `PING` at SharedMirror's default heartbeat interval) and a subscription: one connection of
/// its process's SUB socket, made distinct by its own source address on 127.0.0.0/8 (libzmq
/// keeps one connection per endpoint and socket).
enum ManyClients {
  /// The key written; the raw forwarder's topic is `bench`.
  static let key = "many"
  /// The writes of each run: enough for a p99 that is not just the slowest write or two.
  static let writes = 200

  /// How far apart the writes are due (ms) with `clients` connected: wider than a write's
  /// fan-out to them (its p99 takes about 20 ms per 1,000 clients), so writes do not queue.
  static func pace(clients: Int) -> Double {
    max(50, Double(clients) / 32)
  }
  /// How many DEALERs share a libzmq context (its default limit is 1,023 sockets).
  static let socketsPerContext = 1_000

  /// The `clients MODE ROUTER PUBLISHER COUNT FIRST WRITES` command: `COUNT` clients named from
  /// `FIRST`, until every one saw write `WRITES`. It prints `ready N` (N clients welcomed),
  /// `synced` once every subscription got a probe, then per write `seen COUNT TIME` (when the
  /// last of its subscriptions got it, ns on CLOCK_MONOTONIC).
  static func run(_ arguments: [String]) throws {
    guard arguments.count == 6, let count = Int(arguments[3]), let first = Int(arguments[4]),
      let writes = Int(arguments[5])
    else { throw BenchmarkError("usage: clients MODE ROUTER PUBLISHER COUNT FIRST WRITES") }
    let mirror = arguments[0] == "mirror"
    let (router, publisher) = (arguments[1], arguments[2])
    raiseOpenFileLimit()

    let contexts = try (0...(count / socketsPerContext)).map { _ in try Context() }
    defer { for context in contexts { context.terminate() } }
    let subscriber = try Socket(context: contexts[0], type: .sub)
    try subscriber.set(.receiveHighWaterMark, 10_000_000)
    try subscriber.set(.subscribe, Array((mirror ? key : "bench").utf8))
    try subscriber.set(.receiveTimeout, 10)
    let target = publisher.replacingOccurrences(of: "tcp://", with: "")
    for index in 0..<count {
      try subscriber.connect("tcp://127.0.\(1 + index / 250).\(1 + index % 250):0;\(target)")
    }
    var dealers: [Socket] = []
    for index in 0..<count {
      let dealer = try Socket(context: contexts[index / socketsPerContext], type: .dealer)
      try dealer.connect(router)
      if mirror { try dealer.send(BrokerMessage.hello(client: "many-\(first + index)").frames) }
      dealers.append(dealer)
    }
    // Every HELLO answered (the raw forwarder answers nothing: its clients only connect).
    var welcomed = 0
    if mirror {
      var waiting = Set(0..<count)
      let deadline = now() + 120_000_000_000
      while !waiting.isEmpty, now() < deadline {
        for index in waiting where try dealers[index].receive(dontWait: true) != nil {
          waiting.remove(index)
        }
        pause(microseconds: 10_000)
      }
      welcomed = count - waiting.count
    }
    Reader.say("ready \(welcomed)")

    var copies: [Int: Int] = [:]
    var seen: [(count: Int, time: UInt64)] = []
    var synced = false
    // Each client pings once a heartbeat, the clients spread over it as independent ones are.
    let heartbeat = UInt64(BrokerClient.Configuration().heartbeatInterval / .nanoseconds(1))
    let round = now()
    var pinged = 0
    var lastMessage = now()
    while seen.count < writes, now() - lastMessage < 60_000_000_000 {
      if mirror {
        let due = Int(Double(now() - round) / Double(heartbeat) * Double(count))
        while pinged < due {
          let dealer = dealers[pinged % count]
          while try dealer.receive(dontWait: true) != nil {}
          _ = try dealer.send(BrokerMessage.ping(versions: []).frames, dontWait: true)
          pinged += 1
        }
      }
      guard let frames = try subscriber.receive() else { continue }
      lastMessage = now()
      let value: Data
      if mirror {
        guard case .update(_, _, _, _, let written) = try BrokerMessage(published: frames) else {
          continue
        }
        value = written
      } else {
        guard frames.count >= 2, let last = frames.last else { continue }
        value = last
      }
      guard let number = Int(String(decoding: value, as: UTF8.self)) else { continue }
      copies[number, default: 0] += 1
      guard copies[number] == count else { continue }
      copies[number] = nil
      if number < 0 {
        // A probe, sent until every subscription is connected.
        if !synced { Reader.say("synced") }
        synced = true
      } else {
        seen.append((number, now()))
      }
    }
    for dealer in dealers { dealer.close() }
    subscriber.close()
    Reader.say(seen.map { "seen \($0.count) \($0.time)" }.joined(separator: "\n"))
  }

  /// Raises the soft limit on open files to the hard one: each client takes a DEALER (its
  /// connection and its mailbox) and a connection of the SUB socket.
  static func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
  }
}

extension Runs {
  /// What one run with many clients gave.
  struct ClientsRun {
    /// Whether every client was welcomed (on the broker) and every subscription got a probe.
    var synced: Bool
    /// Per write, from when it was due until the last subscription got it (ms).
    var latencies: [Double]
    /// The broker's (or forwarder's) CPU per write, beyond what heartbeats take (µs).
    var cpuPerWrite: Double
    /// The share of one core the broker spends on heartbeats alone.
    var heartbeatCore: Double
    /// The broker's resident memory per connected client (KiB).
    var kilobytesPerClient: Double
    /// The broker's CPU ticks (10 ms) in 2 s with nothing connected.
    var idleTicks: Int
  }

  /// Connects `clients` clients over 4 processes, then writes `writes` times, one every
  /// `pace` ms, from a writer of its own.
  func manyClients(_ mode: Mode, clients: Int, writes: Int, pace: Double) throws -> ClientsRun {
    precondition(mode != .raw, "the raw path without a forwarder process has no server to measure")
    let mirror = mode == .mirror
    let broker = mirror ? try BrokerProcess(bin: bin) : nil
    let forwarder = mirror ? nil : try RawForwarder.Process(selfPath: selfPath, acknowledges: true)
    defer {
      broker?.child.stop()
      forwarder?.stop()
    }
    let server = (broker?.child ?? forwarder!.child).process.processIdentifier
    let (router, publisher) = (broker?.router ?? forwarder!.router, broker?.publisher ?? forwarder!.publisher)

    let idleStart = cpuMicroseconds(pid: server)
    pause(microseconds: 2_000_000)
    let idleTicks = Int(((cpuMicroseconds(pid: server) - idleStart) / 10_000).rounded())
    let memoryBefore = residentMemory(pid: server)

    let processes = 4
    let children = try (0..<processes).map { index in
      let share = clients / processes + (index < clients % processes ? 1 : 0)
      return try Child(
        selfPath,
        ["clients", mode.rawValue, router, publisher, "\(share)", "\(index * clients)", "\(writes)"])
    }
    defer { for child in children { child.stop() } }
    for child in children { try child.wait(for: "ready", timeout: 180) }
    let welcomed = children.compactMap { child in
      child.output.split(separator: "\n").first { $0.hasPrefix("ready ") }
        .flatMap { Int($0.dropFirst(6)) }
    }.reduce(0, +)

    let context = try Context()
    defer { context.terminate() }
    var version: UInt64 = 0
    var writeID: UInt64 = 0
    let writer: Socket
    if let broker {
      writer = try broker.dealer(in: context, client: "bench-writer") { try $0.set(.receiveTimeout, 10_000) }
    } else {
      writer = try Socket(context: context, type: .dealer)
      try writer.set(.receiveTimeout, 10_000)
      try writer.connect(router)
    }
    defer { writer.close() }
    func write(_ number: Int) throws {
      let value = Data("\(number)".utf8)
      guard mirror else {
        // The fields of an `UPDATE` after its topic, which the forwarder puts in front: its
        // fan-out handles as many frames per subscription as the broker's.
        let fields = ["UPDATE", "\(number)", "bench-writer", "\(number)"].map { Data($0.utf8) }
        _ = try writer.send(fields + [value])
        _ = try writer.receive()
        return
      }
      writeID += 1
      _ = try writer.send(
        BrokerMessage.write(
          client: "bench-writer", write: writeID, key: ManyClients.key, base: version, value: value,
          after: nil
        ).frames)
      guard let frames = try writer.receive(), case .ack(_, _, let made) = try BrokerMessage(frames: frames)
      else { throw BenchmarkError("a write to \(clients) clients was not acknowledged") }
      version = made
    }

    // Probes until every subscription of every process got one.
    var probe = 0
    let syncDeadline = now() + 120_000_000_000
    while children.contains(where: { !$0.output.contains("synced") }), now() < syncDeadline {
      probe -= 1
      try write(probe)
      pause(microseconds: 200_000)
    }
    let synced =
      children.allSatisfy { $0.output.contains("synced") } && (!mirror || welcomed == clients)
    let memory = Double(residentMemory(pid: server) - memoryBefore) / Double(clients)

    let heartbeatStart = cpuMicroseconds(pid: server)
    pause(microseconds: 4_000_000)
    let heartbeatRate = (cpuMicroseconds(pid: server) - heartbeatStart) / 4_000_000

    let writesStart = cpuMicroseconds(pid: server)
    let start = now()
    var due = [UInt64](repeating: 0, count: writes + 1)
    for number in 1...writes {
      due[number] = start + UInt64(Double(number - 1) * pace * 1_000_000)
      pause(until: due[number])
      try write(number)
    }
    let outputs = children.map { $0.finish() }
    let elapsed = Double(now() - start) / 1_000
    let writesCPU = cpuMicroseconds(pid: server) - writesStart - heartbeatRate * elapsed
    var last = [UInt64](repeating: 0, count: writes + 1)
    for output in outputs {
      for line in output.split(separator: "\n") where line.hasPrefix("seen ") {
        let fields = line.split(separator: " ")
        guard fields.count == 3, let number = Int(fields[1]), let time = UInt64(fields[2]),
          number >= 1, number <= writes
        else { continue }
        last[number] = max(last[number], time)
      }
    }
    let complete = (1...writes).filter { number in
      outputs.allSatisfy { $0.contains("seen \(number) ") }
    }
    return ClientsRun(
      synced: synced && complete.count == writes,
      latencies: complete.map { Double(last[$0] - due[$0]) / 1_000_000 },
      cpuPerWrite: writesCPU / Double(writes), heartbeatCore: heartbeatRate,
      kilobytesPerClient: memory, idleTicks: idleTicks)
  }
}

/// A process's resident memory, in KiB, from `/proc/PID/status`.
func residentMemory(pid: Int32) -> Int {
  let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
  let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
  return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}
