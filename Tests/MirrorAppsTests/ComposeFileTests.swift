import Foundation
import Testing
import TestSupport

/// There is no Docker engine here; Debian's docker-compose still parses and validates the file.
@Suite struct ComposeFileTests {
  static let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  func compose(_ arguments: String...) async throws -> (status: Int32, output: String) {
    try await runCommand(
      "/usr/bin/docker-compose",
      ["--project-directory", Self.root.path, "-f",
        Self.root.appendingPathComponent("docker-compose.yml").path] + arguments
    )
  }

  @Test func composeFileIsValidAndRunsTheThreeServices() async throws {
    let services = try await compose("config", "--services")
    #expect(services.status == 0, "\(services.output)")
    #expect(Set(services.output.split(separator: "\n").map(String.init)) == ["broker", "counter", "profile"])

    let config = try await compose("config")
    #expect(config.status == 0)
    #expect(config.output.contains("condition: service_healthy"))
    #expect(config.output.contains("- --data"))
    #expect(config.output.contains("- --autoplay"))
    #expect(config.output.contains("broker-data"))
  }

  /// Without CURVE, the broker's ports are for this machine only; and the health check, run
  /// every few seconds, is a PING that the broker keeps no client record for.
  @Test func brokerPortsAreLoopbackOnlyAndTheHealthCheckIsAPing() async throws {
    let config = try await compose("config")
    #expect(config.status == 0)
    #expect(config.output.contains("- 127.0.0.1:5555:5555/tcp"))
    #expect(config.output.contains("- 127.0.0.1:5556:5556/tcp"))
    #expect(!config.output.contains("- 5555:5555"))
    #expect(config.output.contains("- CMD\n      - broker\n      - ping\n      - tcp://127.0.0.1:5555\n"))
  }
}
