import Foundation
import Testing
import TestSupport

/// The interactive UI, driven through tmux as a person would: keys in, screen contents out.
@Suite(.timeLimit(.minutes(1)))
struct TerminalUITests {
  let session = "sharedmirror-\(UUID().uuidString.prefix(8))"

  /// Runs tmux against a server of this test's own (`-L`), never the user's, started fresh.
  @discardableResult
  func tmux(_ arguments: String...) throws -> String {
    try runCommand("/usr/bin/tmux", ["-L", session] + arguments).output
  }

  /// Re-reads the pane until it shows `text` (a screen changes asynchronously); gives up after
  /// `timeout` and returns the last screen either way.
  func screen(_ pane: String, showing text: String, timeout: Duration = .seconds(10)) async throws
    -> String
  {
    let deadline = ContinuousClock.now + timeout
    var contents = ""
    while ContinuousClock.now < deadline {
      contents = try tmux("capture-pane", "-p", "-t", pane)
      if contents.contains(text) { return contents }
      try await Task.sleep(for: .milliseconds(50))
    }
    return contents
  }

  @Test func counterAndProfileMirrorEachOtherInTmux() async throws {
    let (broker, router, _) = try await startBroker()
    defer { broker.signal(SIGTERM) }
    let bin = productsDirectory.path
    try tmux(
      "new-session", "-d", "-s", session, "-x", "100", "-y", "20",
      "\(bin)/counter --broker \(router)"
    )
    defer { _ = try? tmux("kill-server") }
    try tmux("split-window", "-t", session, "-v", "\(bin)/profile --broker \(router)")
    let counter = "\(session):0.0"
    let profile = "\(session):0.1"

    #expect(try await screen(counter, showing: "connected").contains("count  0"))
    #expect(try await screen(profile, showing: "connected").contains("current  0"))
    for _ in 0..<3 { try tmux("send-keys", "-t", counter, "+") }
    #expect(try await screen(profile, showing: "current  3").contains("taps     3"))
    try tmux("send-keys", "-t", counter, "p")
    #expect(try await screen(counter, showing: "👍 The number 3 is prime!").contains("count  3"))
    try tmux("send-keys", "-t", counter, "x")  // any key dismisses the alert
    #expect(!(try await screen(counter, showing: "[q] quit").contains("prime!")))

    try tmux("send-keys", "-t", profile, "r")
    #expect(try await screen(counter, showing: "count  0").contains("count  0"))

    try tmux("send-keys", "-t", counter, "q")
    try tmux("send-keys", "-t", profile, "q")
  }
}
