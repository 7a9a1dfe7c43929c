import Foundation
import Testing
import TestSupport

/// There is no Docker engine here; Debian's docker-compose still parses and validates the file.
@Suite struct ComposeFileTests {
  static let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  func compose(_ arguments: String...) throws -> (status: Int32, output: String) {
    try runCommand(
      "/usr/bin/docker-compose",
      ["--project-directory", Self.root.path, "-f",
        Self.root.appendingPathComponent("docker-compose.yml").path] + arguments
    )
  }

  @Test func composeFileIsValidAndRunsTheThreeServices() throws {
    let services = try compose("config", "--services")
    #expect(services.status == 0, "\(services.output)")
    #expect(Set(services.output.split(separator: "\n").map(String.init)) == ["broker", "counter", "profile"])

    let config = try compose("config")
    #expect(config.status == 0)
    #expect(config.output.contains("condition: service_healthy"))
    #expect(config.output.contains("- --data"))
    #expect(config.output.contains("- --autoplay"))
    #expect(config.output.contains("broker-data"))
  }

  @Test func dockerfileBuildsInTheSwiftImageAndRunsOnSlimDebian() throws {
    let dockerfile = try String(
      contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8
    )
    #expect(dockerfile.contains("FROM swift:"))
    #expect(dockerfile.contains("FROM debian:bookworm-slim"))
    #expect(dockerfile.contains("libzmq5"))
  }
}
