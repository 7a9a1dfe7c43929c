import Foundation

extension Runs {
  /// One run of the web front's section.
  struct WebFrontRun {
    /// Per tap, from the tap to the value on a terminal `profile` (ms): a tab's, and a terminal
    /// client's (as `counter` taps) in the same run.
    var tab: [Double] = []
    var terminal: [Double] = []
    /// The same protocol client (a Python script) tapping straight to the broker over ZeroMQ,
    /// and through the front over a WebSocket as a tab does: the front's own cost.
    var sameOverZeroMQ: [Double] = []
    var sameOverWebSocket: [Double] = []
    /// The tab's clock against the machine's, as the page read it, and the round trip that
    /// bounds the reading (µs).
    var clockOffset = 0.0
    var clockRoundTrip = 0.0
    /// CPU (µs) per update: the front's per connected tab, and a terminal `profile`'s.
    var frontPerTab = 0.0
    var profile = 0.0
  }

  /// How many taps each path makes per run, and how far apart (ms).
  static let webTaps = 200
  static let webPace = 20
  /// The tabs connected while the CPU is counted, and the updates they watch.
  static let webTabs = 4
  static let webUpdates = 500

  private var browserCheck: String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../../../Scripts/browser_check.py").standardized.path
  }

  private var protocolTapper: String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../../Scripts/protocol_tapper.py").standardized.path
  }

  /// A broker, the web front before it, and a terminal `profile` whose output lines are timed:
  /// a tab (headless Chromium) taps, then a terminal client taps, then one protocol client
  /// over ZeroMQ and over the front's WebSocket, each timing its own taps;
  /// then tabs watch while a terminal client writes, for the front's CPU per update and tab.
  func webFront() throws -> WebFrontRun {
    let broker = try BrokerProcess(bin: bin)
    defer { broker.stop() }
    let web = try Child(
      "\(bin)/web", ["--broker", broker.router, "--listen", "127.0.0.1:0"], collectingErrors: true)
    defer { web.stop() }
    try web.wait(for: "Serving the page")
    guard
      let url = web.output.split(separator: " ").first(where: { $0.hasPrefix("url=") })?
        .dropFirst(4)
    else { throw BenchmarkError("web named no url: \(web.output)") }
    let profile = try StampedLines(
      "\(bin)/profile", ["--broker", broker.router, "--print", "json"])
    defer { profile.stop() }
    var run = WebFrontRun()
    let taps = [String(Self.webTaps), String(Self.webPace)]
    let tab = try timedTaps(
      "/usr/bin/python3", [browserCheck, String(url), "timed"] + taps, profile: profile)
    run.tab = tab.latencies
    if let check = tab.output.split(separator: "\n").first(where: { $0.hasPrefix("clock offset ") }) {
      let words = check.split(separator: " ")
      run.clockOffset = Double(words[2]) ?? 0
      run.clockRoundTrip = Double(words[5]) ?? 0
    }
    run.terminal = try timedTaps(selfPath, ["tapper", broker.router] + taps, profile: profile)
      .latencies
    run.sameOverZeroMQ = try timedTaps(
      "/usr/bin/python3", [protocolTapper, "zmq", broker.router] + taps, profile: profile
    ).latencies
    run.sameOverWebSocket = try timedTaps(
      "/usr/bin/python3", [protocolTapper, "ws", String(url)] + taps, profile: profile
    ).latencies

    let first = Self.count(in: profile.stamped.last?.line)
    let watch = try Child(
      "/usr/bin/python3",
      [browserCheck, String(url), "watch", String(Self.webTabs), String(first + Self.webUpdates)])
    defer { watch.stop() }
    try watch.wait(for: "ready", timeout: 60)
    let versionBefore = try broker.version(of: "stats")
    let (webBefore, profileBefore) = (
      cpuMicroseconds(pid: web.process.processIdentifier),
      cpuMicroseconds(pid: profile.processIdentifier)
    )
    let tapper = try Child(selfPath, ["tapper", broker.router, String(Self.webUpdates), "4"])
    _ = tapper.finish()
    try watch.wait(for: "done", timeout: 120)
    let updates = Double(try broker.version(of: "stats") - versionBefore)
    run.frontPerTab =
      (cpuMicroseconds(pid: web.process.processIdentifier) - webBefore)
      / (updates * Double(Self.webTabs))
    run.profile = (cpuMicroseconds(pid: profile.processIdentifier) - profileBefore) / updates
    return run
  }

  /// Runs a tapper (it prints `taps T1 T2 ...`) and returns, per tap, the time (ms) until the
  /// profile printed the count it made, with what the tapper printed.
  private func timedTaps(_ executable: String, _ arguments: [String], profile: StampedLines) throws
    -> (latencies: [Double], output: String)
  {
    let start = Self.count(in: profile.stamped.last?.line)
    let tapper = try Child(executable, arguments)
    let output = tapper.finish()
    guard tapper.process.terminationStatus == 0,
      let line = output.split(separator: "\n").last(where: { $0.hasPrefix("taps ") })
    else { throw BenchmarkError("\(arguments.first ?? "") failed: \(output.suffix(500))") }
    let taps = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    let latencies = try taps.enumerated().map { index, tapped in
      let arrived = try profile.time(ofFirstLine: { Self.count(in: $0) >= start + index + 1 })
      return (arrived - tapped) / 1_000
    }
    return (latencies, output)
  }

  /// The count in a line of `profile --print json` (0 for none).
  private static func count(in line: String?) -> Int {
    guard let line, let data = line.data(using: .utf8),
      let stats = try? JSONDecoder().decode(Reader.Stats.self, from: data)
    else { return 0 }
    return stats.count
  }
}
