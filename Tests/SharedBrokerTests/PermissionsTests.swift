import Foundation
import Testing
import TestSupport

/// The allow-list's permissions as an operator meets them: pyzmq clients with CURVE keys
/// against the broker program, a read-only key, a key limited by patterns, subscriptions with an
/// empty prefix, a stolen client id, and `SIGHUP` reloads that grant, narrow, remove, and fail
/// to parse (`Scripts/permissions_check.py`).
@Suite(.timeLimit(.minutes(1)))
struct PermissionsTests {
  static let script = repositoryFile("Scripts/permissions_check.py")

  @Test func theBrokerProgramEnforcesTheAllowList() async throws {
    let (status, output) = try await runCommand(
      "/usr/bin/python3", [Self.script.path, productsDirectory.appendingPathComponent("broker").path]
    )
    #expect(status == 0, "python3 said: \(output)")
    #expect(output.contains("permissions: 39 checked"), "\(output)")
  }
}
