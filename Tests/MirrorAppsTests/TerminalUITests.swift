import Foundation
import TestSupport
import Testing

/// The interactive UI, driven through tmux as a person would: keys in, screen contents out.
@Suite(.timeLimit(.minutes(1)))
struct TerminalUITests {
  let session = "sharedmirror-\(UUID().uuidString.prefix(8))"

  /// Runs tmux against a server of this test's own (`-L`), never the user's, started fresh.
  @discardableResult
  func tmux(_ arguments: String...) async throws -> String {
    try await runCommand("/usr/bin/tmux", ["-L", session] + arguments).output
  }

  /// Runs `body`, then stops this test's tmux server, whether `body` failed or the test's time
  /// limit cancelled it (a detached task is not cancelled with the test).
  func withServer(_ body: () async throws -> Void) async throws {
    var failure: (any Error)?
    do { try await body() } catch { failure = error }
    await Task.detached { [self] in _ = try? await tmux("kill-server") }.value
    if let failure { throw failure }
  }

  /// Re-reads the pane until it shows `text` (a screen changes asynchronously); gives up after
  /// `timeout` and returns the last screen either way.
  func screen(_ pane: String, showing text: String, timeout: Duration = .seconds(10)) async throws
    -> String
  {
    try await screen(pane, where: { $0.contains(text) }, timeout: timeout)
  }

  /// Re-reads the pane until `done` holds for it; gives up after `timeout` and returns the last
  /// screen either way.
  func screen(
    _ pane: String, where done: (String) -> Bool, timeout: Duration = .seconds(10)
  ) async throws -> String {
    let deadline = ContinuousClock.now + timeout
    var contents = ""
    while ContinuousClock.now < deadline {
      contents = try await tmux("capture-pane", "-p", "-t", pane)
      if done(contents) { return contents }
      try await Task.sleep(for: .milliseconds(50))
    }
    return contents
  }

  /// A pane command that runs `program` and then shows how it ended, as `EXIT=<status>`.
  func reportingExit(_ program: String) -> String {
    "\(productsDirectory.path)/\(program); echo EXIT=$?; sleep 60"
  }

  /// Starts this test's session, `width` columns wide, running `program` (see
  /// ``reportingExit(_:)``); returns its pane.
  func startSession(width: Int, running program: String) async throws -> String {
    try await tmux(
      "new-session", "-d", "-s", session, "-x", "\(width)", "-y", "20", reportingExit(program))
    return "\(session):0.0"
  }

  @Test func counterAndProfileMirrorEachOtherInTmux() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    try await withServer {
      let counter = try await startSession(width: 100, running: "counter --broker \(router)")
      try await tmux(
        "split-window", "-t", session, "-v", reportingExit("profile --broker \(router)"))
      let profile = "\(session):0.1"

      #expect(try await screen(counter, showing: "connected").contains("count  0"))
      #expect(try await screen(profile, showing: "connected").contains("current  0"))
      for _ in 0..<3 { try await tmux("send-keys", "-t", counter, "+") }
      #expect(try await screen(profile, showing: "current  3").contains("taps     3"))
      try await tmux("send-keys", "-t", counter, "p")
      #expect(try await screen(counter, showing: "👍 The number 3 is prime!").contains("count  3"))
      try await tmux("send-keys", "-t", counter, "x")  // any key dismisses the alert
      #expect(!(try await screen(counter, where: { !$0.contains("prime!") }).contains("prime!")))

      try await tmux("send-keys", "-t", profile, "r")
      #expect(try await screen(counter, showing: "count  0").contains("count  0"))

      // Taps right before q still reach the broker: quitting waits for their confirmation.
      for _ in 0..<2 { try await tmux("send-keys", "-t", counter, "+") }
      try await tmux("send-keys", "-t", counter, "q")
      try await tmux("send-keys", "-t", profile, "q")
      #expect(try await screen(counter, showing: "EXIT=").contains("EXIT=0"))
      #expect(try await screen(profile, showing: "EXIT=").contains("EXIT=0"))
      let reader = try await ChildProcess("profile", ["--broker", router, "--once"])
      #expect(await reader.waitForExit() == 0)
      #expect(reader.printed.hasPrefix("current 2 "), "\(reader.printed)")
    }
  }

  /// In a narrow pane the header and the key help break between words, not wherever the pane
  /// ends, and a resize draws them again for the new width.
  @Test func linesFitThePaneAndFollowItsResizes() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    try await withServer {
      let counter = try await startSession(width: 50, running: "counter --broker \(router)")
      let narrow = try await screen(counter, showing: "connected")
      for whole in [router, "[p] is this prime?", "[-] decrement"] {
        #expect(narrow.contains(whole), "\(narrow)")
      }
      #expect(!narrow.contains("decrement   [p]"), "\(narrow)")

      try await tmux("resize-window", "-t", session, "-x", "100")
      let wide = try await screen(counter, showing: "[-] decrement   [p] is this prime?   [q] quit")
      #expect(wide.contains("\(router) · connected"), "\(wide)")
      try await tmux("send-keys", "-t", counter, "q")
      #expect(try await screen(counter, showing: "EXIT=").contains("EXIT=0"))
    }
  }

  /// A broker just started answers but holds writes back for its seed window: quitting waits
  /// for it rather than losing the taps.
  @Test func quittingWhileTheBrokerHoldsWritesBackKeepsTheTaps() async throws {
    try await withServer {
      // A window long enough that a loaded machine still quits well inside it.
      let (broker, router, _) = try await startBroker(["--seed-window", "15"])
      defer { broker.signal(SIGTERM) }
      let counter = try await startSession(
        width: 120, running: "counter --broker \(router) --timeout 40")
      #expect(try await screen(counter, showing: "syncing").contains("syncing"))
      try await tmux("send-keys", "-t", counter, "+")
      try await tmux("send-keys", "-t", counter, "q")
      let ended = try await screen(counter, showing: "EXIT=", timeout: .seconds(45))
      #expect(ended.contains("answers but has not confirmed 1 tap yet"), "\(ended)")
      #expect(ended.contains("counter: the broker confirmed every tap"), "\(ended)")
      #expect(ended.contains("EXIT=0"), "\(ended)")
      let profile = try await runCommand(
        "\(productsDirectory.path)/profile", ["--broker", router, "--once", "--print", "json"])
      #expect(profile.output.contains(#""count":1,"#), "\(profile.output)")
    }
  }

  /// A broker that answers but does not confirm (its seed window here; a broker that froze,
  /// until the client's heartbeats time out) leaves the connection looking fine: the waiting
  /// taps are shown once they waited for a second, and go once confirmed.
  @Test func tapsTheBrokerHoldsBackAreShownWhileTheyWait() async throws {
    try await withServer {
      // Long enough that a loaded machine taps well inside it.
      let (broker, router, _) = try await startBroker(["--seed-window", "15"])
      defer { broker.signal(SIGTERM) }
      let counter = try await startSession(width: 120, running: "counter --broker \(router)")
      #expect(try await screen(counter, showing: "syncing").contains("count  –"))
      try await tmux("send-keys", "-t", counter, "+")
      let waiting = try await screen(counter, showing: "1 tap waits")
      #expect(waiting.contains(Self.heldBack), "\(waiting)")
      #expect(!waiting.contains("disconnected"), "\(waiting)")
      let confirmed = try await screen(
        counter, where: { !$0.contains("tap waits") && $0.contains("connected") },
        timeout: .seconds(30))
      #expect(confirmed.contains("count  1"), "\(confirmed)")
      try await tmux("send-keys", "-t", counter, "q")
      #expect(try await screen(counter, showing: "EXIT=").contains("EXIT=0"))
    }
  }

  /// What the screen says of a tap the broker holds back for its seed window (it refused the
  /// write with `seeding`).
  static let heldBack =
    "1 tap waits: the broker holds writes back while it collects its clients' copies after "
    + "its start (its seed window)"

  /// A broker restarted with its data sends the value at once, so the header says `connected`,
  /// and holds taps back for its seed window: the screen says why they wait, not just that they
  /// do beside `connected`.
  @Test func tapsHeldBackBesideConnectedSayWhy() async throws {
    let (broker, router, data) = try await startBrokerHoldingWrites()
    defer { try? FileManager.default.removeItem(at: data) }
    defer { broker.signal(SIGTERM) }
    try await withServer {
      let counter = try await startSession(
        width: 160, running: "counter --broker \(router) --timeout 1")
      #expect(try await screen(counter, showing: "· connected").contains("count  2"))
      try await tmux("send-keys", "-t", counter, "+")
      let waiting = try await screen(counter, showing: "1 tap waits")
      #expect(waiting.contains(Self.heldBack), "\(waiting)")
      #expect(waiting.contains("\(router) · connected"), "\(waiting)")
      #expect(waiting.contains("count  3"), "\(waiting)")
      // Quitting inside the window loses the tap, and says so.
      try await tmux("send-keys", "-t", counter, "q")
      let ended = try await screen(counter, showing: "EXIT=")
      #expect(ended.contains("1 tap was not confirmed"), "\(ended)")
      #expect(ended.contains("EXIT=1"), "\(ended)")
    }
  }

  /// A broker that dies closes its connections: the screen says so at once, not after the
  /// heartbeats that find a frozen one (3 × 2.5 s), and a tap meanwhile waits and goes through
  /// when the broker is back.
  @Test func aKilledBrokerShowsAtOnceAndTheTapsWaitForItsReturn() async throws {
    try await withServer {
      var (broker, router, publisher) = try await startBroker()
      let counter = try await startSession(width: 120, running: "counter --broker \(router)")
      #expect(try await screen(counter, showing: "· connected").contains("count  0"))
      broker.signal(SIGKILL)
      _ = await broker.waitForExit()
      let killed = ContinuousClock.now
      let down = try await screen(counter, showing: "disconnected")
      #expect(down.contains("disconnected"), "\(down)")
      #expect(ContinuousClock.now - killed < .seconds(5), "noticed by heartbeats, not by the connection")
      try await tmux("send-keys", "-t", counter, "+")
      let waiting = try await screen(counter, showing: "1 tap waits")
      #expect(waiting.contains("count  1") && waiting.contains("disconnected"), "\(waiting)")

      broker = try await ChildProcess(
        "broker", ["--listen", router, "--publish", publisher, "--seed-window", "1"])
      defer { broker.signal(SIGTERM) }
      let back = try await screen(
        counter, where: { !$0.contains("tap waits") && $0.contains("· connected") }, timeout: .seconds(30))
      #expect(back.contains("count  1"), "\(back)")
      try await tmux("send-keys", "-t", counter, "q")
      #expect(try await screen(counter, showing: "EXIT=").contains("EXIT=0"))
    }
  }

  /// With nothing to confirm, `q` ends at once, broker or not.
  @Test func quittingWithNothingPendingEndsAtOnce() async throws {
    try await withServer {
      let counter = try await startSession(width: 120, running: "counter --broker tcp://127.0.0.1:9")
      #expect(try await screen(counter, showing: "connecting").contains("count  –"))
      try await tmux("send-keys", "-t", counter, "q")
      let ended = try await screen(counter, showing: "EXIT=")
      #expect(ended.contains("EXIT=0"), "\(ended)")
      // Quitting while disconnected says that it waits, and for how long, before it waits for
      // the broker to confirm: with nothing to confirm, it neither says so nor waits.
      #expect(!ended.contains("waiting up to"), "\(ended)")
    }
  }

  /// Taps the broker never confirmed are not dropped without a word.
  @Test func quittingWithTheBrokerDownReportsTheLostTaps() async throws {
    try await withServer {
      let counter = try await startSession(
        width: 120, running: "counter --broker tcp://127.0.0.1:9")
      let connecting = try await screen(counter, showing: "connecting")
      #expect(connecting.contains("count  –"), "\(connecting)")
      #expect(connecting.contains("[p] is this prime? (once the count is known)"), "\(connecting)")
      // No count is known, so p answers nothing: an answer would take the next key to dismiss
      // it, and the third + would not be counted.
      for key in ["p", "+", "+", "+"] { try await tmux("send-keys", "-t", counter, key) }
      let waiting = try await screen(counter, showing: "3 taps wait")
      #expect(
        waiting.contains("3 taps wait for the broker (kept here; sent when it answers"),
        "\(waiting)")
      #expect(waiting.contains("count  –") && !waiting.contains("The number"), "\(waiting)")
      try await tmux("send-keys", "-t", counter, "C-c")
      let ended = try await screen(counter, showing: "EXIT=")
      #expect(ended.contains("waiting up to 2.0 seconds for the broker to confirm 3 taps"), "\(ended)")
      #expect(
        ended.contains("3 taps were not confirmed by the broker at tcp://127.0.0.1:9"), "\(ended)")
      #expect(ended.contains("EXIT=1"), "\(ended)")
    }
  }

  /// A counter whose key may only read the key shows `read-only` once a tap is refused, undoes
  /// it (the count stays the broker's, nothing waits), refuses the next ones at once, and
  /// quitting says how many taps were refused, and exits 0.
  @Test func aReadOnlyCounterRefusesTapsAtOnce() async throws {
    let keys = try await CurveKeys(clients: ["reader"])
    defer { keys.remove() }
    try keys.allow([("reader", "read=stats")])
    let (broker, router, _) = try await startBroker(keys.brokerArguments)
    defer { broker.signal(SIGTERM) }
    let credentials = try keys.credentials("reader").map { "'\($0)'" }.joined(separator: " ")
    try await withServer {
      let counter = try await startSession(
        width: 200, running: "counter --broker \(router) \(credentials)")
      _ = try await screen(counter, showing: "connected")
      for _ in 0..<3 { try await tmux("send-keys", "-t", counter, "+") }
      let refused = try await screen(counter, showing: "3 taps refused")
      #expect(refused.contains("read-only"), "\(refused)")
      #expect(refused.contains("count  0"), "the taps are undone: \(refused)")
      #expect(!refused.contains("wait"), "nothing is left pending: \(refused)")
      try await tmux("send-keys", "-t", counter, "q")
      let ended = try await screen(counter, showing: "EXIT=")
      #expect(ended.contains("3 taps were refused by the broker at \(router)"), "\(ended)")
      // Undone, not waiting: quitting loses nothing.
      #expect(ended.contains("EXIT=0"), "\(ended)")
    }
  }

  /// A broker that refused the client will not confirm its taps: quitting says so at once,
  /// without waiting out a timeout.
  @Test func quittingARefusedCounterReportsTheLostTaps() async throws {
    let keys = FileManager.default.temporaryDirectory.appendingPathComponent("refused-\(UUID())")
    try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: keys) }
    for name in ["server", "client"] {
      let made = try await runCommand(
        "\(productsDirectory.path)/broker", ["keygen", keys.appendingPathComponent(name).path])
      #expect(made.status == 0, "\(made.output)")
    }
    let serverKey = try String(
      contentsOf: keys.appendingPathComponent("server.pub"), encoding: .utf8
    ).trimmingCharacters(in: .whitespacesAndNewlines)
    // An empty allow-list: the client's key is refused.
    let (broker, router, _) = try await startBroker([
      "--curve-secret-file", keys.appendingPathComponent("server.key").path,
      "--allow-keys", "/dev/null",
    ])
    defer { broker.signal(SIGTERM) }
    try await withServer {
      // Z85 keys hold characters a shell reads, but no quotes.
      let counter = try await startSession(
        width: 160,
        running: "counter --broker \(router) --timeout 40 --curve-server-key '\(serverKey)' "
          + "--curve-key-file '\(keys.appendingPathComponent("client.key").path)'")
      let refused = try await screen(counter, showing: "refused")
      #expect(refused.contains("not on the broker's allow-list"), "\(refused)")
      for _ in 0..<2 { try await tmux("send-keys", "-t", counter, "+") }
      let waiting = try await screen(counter, showing: "2 taps wait")
      #expect(waiting.contains("count  –"), "the broker never sent a count: \(waiting)")
      try await tmux("send-keys", "-t", counter, "q")
      let ended = try await screen(counter, showing: "EXIT=")
      #expect(
        ended.contains("2 taps were not confirmed: the broker at \(router) refused this client"),
        "\(ended)")
      #expect(ended.contains("EXIT=1"), "\(ended)")
    }
  }
}
