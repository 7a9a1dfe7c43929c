import Foundation
import TestSupport
import Testing

/// The web front and its page in a real browser (headless Chromium, driven by
/// Scripts/browser_check.py), beside the terminal programs.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct BrowserTests {
  /// Starts `web` on a port the system picks, in front of the broker at `router`.
  static func startWeb(_ router: String, _ arguments: [String] = []) async throws -> (ChildProcess, String) {
    let web = try await ChildProcess(
      "web", ["--broker", router, "--listen", "127.0.0.1:0"] + arguments)
    let line = try #require(await web.waitForOutput(containing: "Serving the page"))
    let url = try #require(
      line.split(separator: " ").first { $0.hasPrefix("url=") }.map { String($0.dropFirst(4)) },
      "\(web.printed)")
    return (web, url)
  }

  /// Starts a broker that serves its metrics; returns them as `web --broker-metrics` takes them.
  static func startBrokerWithMetrics() async throws -> (ChildProcess, String, String) {
    let (broker, router, _) = try await startBroker(["--metrics", "127.0.0.1:0"])
    let printed = await broker.waitForOutput(containing: "Metrics listening") ?? broker.printed
    let metrics = try #require(
      printed.split(separator: " ").first { $0.hasPrefix("metrics=http://") }
        .map { $0.dropFirst("metrics=http://".count).replacingOccurrences(of: "/metrics", with: "") },
      "\(printed)")
    return (broker, router, metrics)
  }

  static func browser(_ arguments: [String]) async throws -> ChildProcess {
    try await ChildProcess(
      executable: URL(fileURLWithPath: "/usr/bin/python3"),
      [repositoryFile("Scripts/browser_check.py").path] + arguments)
  }

  static func profileCount(_ router: String, _ credentials: [String] = []) async throws -> String {
    let profile = try await ChildProcess(
      "profile", ["--broker", router, "--once", "--print", "json"] + credentials)
    #expect(await profile.waitForExit() == 0, "\(profile.printed)")
    return profile.printed.split(separator: "\n").last.map(String.init) ?? ""
  }

  /// Two tabs and a terminal counter tap 500 times each, all at once: every tab, the terminal
  /// and a profile end at the exact total.
  @Test func twoTabsAndATerminalCounterEndAtTheExactTotal() async throws {
    let (broker, router, metrics) = try await Self.startBrokerWithMetrics()
    defer { broker.signal(SIGTERM) }
    let (web, url) = try await Self.startWeb(router, ["--broker-metrics", metrics])
    defer { web.signal(SIGTERM) }
    let screenshot = FileManager.default.temporaryDirectory
      .appendingPathComponent("sharedmirror-web-\(UUID().uuidString).png")
    defer { try? FileManager.default.removeItem(at: screenshot) }
    let tabs = try await Self.browser([url, "taps", "2", "500", "1500", screenshot.path])
    #expect(await tabs.waitForOutput(containing: "ready") != nil, "\(tabs.printed)")
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x500", "--print", "json", "--timeout", "60"])
    #expect(await counter.waitForExit() == 0, "\(counter.printed)")
    #expect(await tabs.waitForExit() == 0, "\(tabs.printed)")
    #expect(tabs.printed.components(separatedBy: "tab 1500 0\n").count == 3, "\(tabs.printed)")
    #expect(
      try await Self.profileCount(router)
        == #"{"count":1500,"maxCount":1500,"minCount":0,"numberOfCounts":1500}"#)
    let image = try Data(contentsOf: screenshot)
    #expect(image.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
    if let keep = ProcessInfo.processInfo.environment["WEB_SCREENSHOT"] {
      try image.write(to: URL(fileURLWithPath: keep))
    }
  }

  /// A tab taps while the broker is SIGKILLed and started again with its data: nothing is lost
  /// and nothing is counted twice.
  @Test func aTabTappingThroughABrokerRestartLosesAndDoublesNothing() async throws {
    try await tapThroughARestart(withData: true)
  }

  /// The same with a broker that keeps nothing, whose only client is the tab: the tab offers
  /// the copy it holds (`SEED`), so the new broker starts from it, not from 0.
  @Test func aTabGivesABrokerThatLostItsDataTheCountBack() async throws {
    try await tapThroughARestart(withData: false)
  }

  func tapThroughARestart(withData: Bool) async throws {
    let data = FileManager.default.temporaryDirectory
      .appendingPathComponent("sharedmirror-web-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: data) }
    let storage = withData ? ["--data", data.path] : []
    var (broker, router, publisher) = try await startBroker(storage)
    let (web, url) = try await Self.startWeb(router)
    defer { web.signal(SIGTERM) }
    let tab = try await Self.browser([url, "slow", "1", "200", "200"])
    #expect(await tab.waitForOutput(containing: "tapped 100") != nil, "\(tab.printed)")
    broker.signal(SIGKILL)
    _ = await broker.waitForExit()
    // Without data, the seed window (its default) is what lets the copy in before a write.
    broker = try await ChildProcess(
      "broker",
      ["--listen", router, "--publish", publisher] + (withData ? storage + ["--seed-window", "0"] : []))
    defer { broker.signal(SIGTERM) }
    #expect(await broker.waitForOutput(containing: "Broker listening") != nil)
    #expect(await tab.waitForExit() == 0, "\(tab.printed)")
    #expect(tab.printed.contains("tab 200 0\n"), "\(tab.printed)")
    #expect(
      try await Self.profileCount(router)
        == #"{"count":200,"maxCount":200,"minCount":0,"numberOfCounts":200}"#)
    if !withData { #expect(broker.printed.contains("Adopted a client's copy"), "\(broker.printed)") }
  }

  /// A tab opened while no broker answers shows no count (a 0 would be a false one), then the
  /// broker's count once a broker answers.
  @Test func aTabShowsNoCountUntilTheBrokerAnswers() async throws {
    let data = FileManager.default.temporaryDirectory
      .appendingPathComponent("sharedmirror-web-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: data) }
    var (broker, router, publisher) = try await startBroker(["--data", data.path])
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x7", "--print", "json", "--timeout", "30"])
    #expect(await counter.waitForExit() == 0, "\(counter.printed)")
    broker.signal(SIGTERM)
    _ = await broker.waitForExit()
    let (web, url) = try await Self.startWeb(router)
    defer { web.signal(SIGTERM) }
    let tab = try await Self.browser([url, "unsynced", "7"])
    let printed = try #require(await tab.waitForOutput(containing: "unsynced "), "\(tab.printed)")
    let shown = try #require(printed.split(separator: "\n").first { $0.hasPrefix("unsynced ") })
    #expect(shown.hasSuffix(" – – – – –"), "\(shown)")
    #expect(!shown.contains("unsynced connected"), "\(shown)")
    broker = try await ChildProcess(
      "broker", ["--listen", router, "--publish", publisher, "--data", data.path])
    defer { broker.signal(SIGTERM) }
    #expect(await tab.waitForExit() == 0, "\(tab.printed)")
    #expect(tab.printed.contains("tab 7 0\n"), "\(tab.printed)")
  }

  /// A front whose key may only read the page's key: the tab's taps are refused and undone (the
  /// count stays the broker's, nothing waits), and the page says `read-only` with how many.
  @Test func aReadOnlyFrontsTapsAreRefusedAndUndone() async throws {
    let keys = try await CurveKeys(clients: ["writer", "web"])
    defer { keys.remove() }
    try keys.allow([("writer", ""), ("web", "read=stats")])
    let (broker, router, _) = try await startBroker(keys.brokerArguments)
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x2", "--print", "json"] + keys.credentials("writer"))
    #expect(await counter.waitForExit() == 0, "\(counter.printed)")
    let (web, url) = try await Self.startWeb(router, try keys.credentials("web"))
    defer { web.signal(SIGTERM) }
    let tab = try await Self.browser([url, "refused", "3", "2"])
    #expect(await tab.waitForExit() == 0, "\(tab.printed)")
    #expect(tab.printed.contains("refused 2 0 3 read-only · 3 taps refused · "), "\(tab.printed)")
    #expect(tab.printed.contains(#"key "stats" is not writable"#), "\(tab.printed)")
    #expect(
      try await Self.profileCount(router, try keys.credentials("writer"))
        == #"{"count":2,"maxCount":2,"minCount":0,"numberOfCounts":2}"#)
  }

  /// Given a cluster's two brokers, a tab taps while the broker it talks to is SIGKILLed: the
  /// front moves it to the other as the connection drops, and nothing is lost or counted twice.
  @Test func aTabMovesToTheOtherBrokerOfItsCluster() async throws {
    try await withEtcdCluster(members: 1) { etcd in
      let (first, firstRouter, _) = try await startBroker(["--store", etcd.store])
      defer { first.signal(SIGKILL) }
      let (second, secondRouter, _) = try await startBroker(["--store", etcd.store])
      defer { second.signal(SIGTERM) }
      let (web, url) = try await Self.startWeb("\(firstRouter),\(secondRouter)")
      defer { web.signal(SIGTERM) }
      let tab = try await Self.browser([url, "slow", "1", "200", "200"])
      #expect(await tab.waitForOutput(containing: "tapped 100") != nil, "\(tab.printed)")
      first.signal(SIGKILL)
      _ = await first.waitForExit()
      #expect(await tab.waitForExit() == 0, "\(tab.printed)")
      #expect(tab.printed.contains("tab 200 0\n"), "\(tab.printed)")
      #expect(
        try await Self.profileCount(secondRouter)
          == #"{"count":200,"maxCount":200,"minCount":0,"numberOfCounts":200}"#)
      // At once, on the dropped connection, not after a HELLO went unanswered.
      #expect(web.printed.contains("reason=its connection dropped"), "\(web.printed)")
      #expect(web.printed.contains("A tab moves to another broker"), "\(web.printed)")
    }
  }

  /// The inspector shows the broker's figures (through `--broker-metrics`) and what the tab
  /// knows of its key: its version, and the writers whose writes it holds.
  @Test func theInspectorShowsTheBrokersClientsAndTheKeysWriters() async throws {
    let (broker, router, metrics) = try await Self.startBrokerWithMetrics()
    defer { broker.signal(SIGTERM) }
    let counter = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x5", "--print", "json", "--timeout", "30"])
    #expect(await counter.waitForExit() == 0, "\(counter.printed)")
    let (web, url) = try await Self.startWeb(router, ["--broker-metrics", metrics])
    defer { web.signal(SIGTERM) }
    let tab = try await Self.browser([url, "inspect", "1", "20", "25"])
    #expect(await tab.waitForExit() == 0, "\(tab.printed)")
    let line = try #require(
      tab.printed.split(separator: "\n").first { $0.hasPrefix("inspector ") }, "\(tab.printed)")
    let fields = Dictionary(
      line.split(separator: " ").compactMap { field -> (String, String)? in
        let parts = field.split(separator: "=", maxSplits: 1)
        return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
      },
      uniquingKeysWith: { first, _ in first })
    #expect(Int(fields["clients"] ?? "") ?? 0 >= 1, "\(line)")
    // One version per applied write; a write in flight carries the taps made meanwhile.
    #expect(fields["keys"] == "1" && (2...25).contains(Int(fields["version"] ?? "") ?? 0), "\(line)")
    #expect(Double(fields["rate"] ?? "") != nil, "\(line)")
    // The tab's own writes, latest first, then the counter's.
    let writers = line.components(separatedBy: "writers=").last ?? ""
    #expect(writers.hasPrefix("this tab (") && writers.contains("), "), "\(line)")
  }

  /// A tab that goes away takes its connections to the broker with it: with 4 WebSockets open
  /// (each said `HELLO`) the front holds 8 (a DEALER and a SUB each), and none once they closed.
  @Test func closedTabsLeaveNoConnectionToTheBroker() async throws {
    let (broker, router, publisher) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let (web, url) = try await Self.startWeb(router)
    defer { web.signal(SIGTERM) }
    let ports = [router, publisher].compactMap { $0.split(separator: ":").last.map(String.init) }
    // The front's established TCP connections to the broker's ports, from /proc.
    let script = """
      import json, os, sys, time, websocket
      page, pid, ports = sys.argv[1].rstrip("/"), sys.argv[2], {int(port) for port in sys.argv[3:]}
      def connections():
          inodes = set()
          for fd in os.listdir(f"/proc/{pid}/fd"):
              try:
                  target = os.readlink(f"/proc/{pid}/fd/{fd}")
              except OSError:
                  continue  # closed since the listing
              if target.startswith("socket:["):
                  inodes.add(target[8:-1])
          count = 0
          for line in open("/proc/net/tcp").readlines()[1:]:
              fields = line.split()
              if fields[3] == "01" and int(fields[2].split(":")[1], 16) in ports and fields[9] in inodes:
                  count += 1
          return count
      def settle(expected):
          deadline = time.monotonic() + 15
          while connections() != expected and time.monotonic() < deadline:
              time.sleep(0.1)
          return connections()
      sockets = []
      for tab in range(4):
          socket = websocket.create_connection(page.replace("http", "ws") + "/ws", origin=page)
          socket.send(json.dumps({"request": ["HELLO", "4", f"closing-{tab}"]}))
          assert "WELCOME" in socket.recv()
          sockets.append(socket)
      print(f"open {settle(8)}")
      for socket in sockets:
          socket.close()
      print(f"closed {settle(0)}")
      """
    let check = try await runCommand(
      "/usr/bin/python3", ["-c", script, url, String(web.processIdentifier)] + ports,
      timeout: .seconds(60))
    #expect(check.output.contains("open 8\n"), "\(check.output)")
    #expect(check.output.contains("closed 0\n"), "\(check.output)")
  }

  /// Bad input at the WebSocket: each refused message gets an `ERROR` and the connection stays
  /// usable, random text (fuzzing) never reaches the broker as a request, an oversized message
  /// closes the connection, and a page of another origin is refused.
  @Test func badInputAtTheWebSocketIsRefusedAndReachesNoBroker() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let (web, url) = try await Self.startWeb(router)
    defer { web.signal(SIGTERM) }
    let socketURL = url.replacingOccurrences(of: "http://", with: "ws://") + "ws"
    let check = try await runCommand(
      "/usr/bin/python3",
      [repositoryFile("Scripts/web_socket_check.py").path, socketURL, "2000"], timeout: .seconds(120))
    #expect(check.status == 0, "\(check.output)")
    #expect(check.output.contains("fuzz: 2000 inputs"), "\(check.output)")
    #expect(check.output.contains("ok another origin refused"), "\(check.output)")
    // The broker heard one HELLO and one PING, and nothing malformed.
    let errors = broker.printed.split(separator: "\n").filter { $0.contains("error") }
    #expect(errors.isEmpty, "\(errors)")
  }
}
