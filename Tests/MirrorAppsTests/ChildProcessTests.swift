import Foundation
import Testing
import TestSupport

/// The test helper that runs the programs: a test's time limit cancels its waits, and a child
/// that would never end is killed rather than left to hang the run.
@Suite(.timeLimit(.minutes(1)))
struct ChildProcessTests {
  @Test func cancelledWaitsEndAndKillTheChild() async throws {
    let child = try await ChildProcess(executable: URL(fileURLWithPath: "/bin/sleep"), ["600"])
    let output = Task { await child.waitForOutput(containing: "never printed") }
    output.cancel()
    #expect(await output.value == nil)

    let exit = Task { await child.waitForExit() }
    exit.cancel()
    #expect(await exit.value == SIGKILL)
    #expect(!child.isRunning)
  }
}
