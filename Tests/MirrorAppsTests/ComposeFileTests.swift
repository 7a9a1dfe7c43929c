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

  /// The block of `service` in `docker-compose config`'s output.
  static func block(of service: String, in config: String) -> String {
    let lines = config.split(separator: "\n", omittingEmptySubsequences: false)
    guard let start = lines.firstIndex(of: "  \(service):"[...]) else { return "" }
    let rest = lines[(start + 1)...].prefix { $0.hasPrefix("    ") || $0.isEmpty }
    return rest.joined(separator: "\n")
  }

  static let haServices = ["etcd-certificates", "etcd1", "etcd2", "etcd3", "broker-a", "broker-b", "counter-a", "counter-b", "profile-ha"]

  @Test func composeFileIsValidAndRunsTheFourServices() async throws {
    let services = try await compose("config", "--services")
    #expect(services.status == 0, "\(services.output)")
    #expect(
      Set(services.output.split(separator: "\n").map(String.init))
        == Set(["broker", "counter", "profile", "web"] + Self.haServices))

    let config = try await compose("config")
    #expect(config.status == 0)
    #expect(config.output.contains("condition: service_healthy"))
    #expect(config.output.contains("- --data"))
    #expect(config.output.contains("- --autoplay"))
    #expect(config.output.contains("broker-data"))
    // `docker compose up` starts these four only: the others are in the `ha` profile.
    for service in ["broker", "counter", "profile", "web"] {
      #expect(!Self.block(of: service, in: config.output).contains("profiles:"))
    }
  }

  /// The image is built with the Swift the README names and this machine has, from the locked
  /// dependency versions, and `.ci/run` (through `make test`) refuses a lock that no longer
  /// matches Package.swift.
  @Test func theImageBuildsWithTheReadmesSwiftAndTheLockedVersions() async throws {
    func text(_ path: String) throws -> String {
      try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }
    let dockerfile = try text("Dockerfile")
    let readme = try text("README.md")
    let version = try #require(
      readme.firstMatch(of: /with Swift (\d+\.\d+\.\d+)/).map { String($0.1) })
    #expect(dockerfile.contains("FROM swift:\(version)-bookworm AS build"))
    #expect(dockerfile.contains("COPY Package.swift Package.resolved ./"))
    let builds = dockerfile.matches(of: /swift build [^&]*--product/).map { String($0.0) }
    #expect(builds.count == 4 && builds.allSatisfy { $0.contains("--force-resolved-versions") })
    #expect(try text("Makefile").contains("LOCKED := --force-resolved-versions"))
    // The compiler that built this test is the one `make` found: decided at compile time, so no
    // PATH lookup of a child process is involved.
    #if compiler(>=6.3.1) && !compiler(>=6.3.2)
      let compiler = "6.3.1"
    #else
      let compiler = "not 6.3.1"
    #endif
    #expect(compiler == version, "README names Swift \(version); this was built with \(compiler)")
  }

  /// `docker compose --profile ha up`: 3 etcd members, 2 brokers sharing them and advertising
  /// their service names, and clients given one broker each, which learn the other from it.
  @Test func haProfileRunsAnEtcdClusterTwoBrokersAndClientsOnBoth() async throws {
    let config = try await compose("--profile", "ha", "config")
    #expect(config.status == 0, "\(config.output)")
    for service in Self.haServices {
      #expect(Self.block(of: service, in: config.output).contains("profiles:\n    - ha"), "\(service)")
    }
    for broker in ["broker-a", "broker-b"] {
      let block = Self.block(of: broker, in: config.output)
      #expect(block.contains("SHARED_BROKER_STORE: etcd://etcd1:2379,etcd2:2379,etcd3:2379"))
      #expect(block.contains("etcd3:\n        condition: service_healthy"))
      #expect(block.contains("- 127.0.0.1:"))
      #expect(block.contains("- --advertise\n    - tcp://\(broker):5555"), "\(block)")
    }
    #expect(Self.block(of: "counter-a", in: config.output).contains("- --broker\n    - tcp://broker-a:5555\n"))
    #expect(Self.block(of: "counter-b", in: config.output).contains("- --broker\n    - tcp://broker-b:5555\n"))
    #expect(config.output.contains("ETCD_INITIAL_CLUSTER: etcd1=https://etcd1:2380,etcd2=https://etcd2:2380,etcd3=https://etcd3:2380"))
    // The example people copy is the safe one: TLS everywhere, and only clients with a
    // certificate from the cluster's authority (made by the one-shot service) get in.
    for member in ["etcd1", "etcd2", "etcd3"] {
      let block = Self.block(of: member, in: config.output)
      for setting in [
        "ETCD_CLIENT_CERT_AUTH: \"true\"", "ETCD_PEER_CLIENT_CERT_AUTH: \"true\"",
        "ETCD_LISTEN_CLIENT_URLS: https://0.0.0.0:2379", "ETCD_ADVERTISE_CLIENT_URLS: https://\(member):2379",
        "etcd-certificates:\n        condition: service_completed_successfully",
        "etcd-certificates:/certificates:ro",
      ] {
        #expect(block.contains(setting), "\(member): \(setting)")
      }
    }
    for broker in ["broker-a", "broker-b"] {
      let block = Self.block(of: broker, in: config.output)
      #expect(block.contains("SHARED_BROKER_ETCD_CERT: /certificates/broker.pem"), "\(block)")
      #expect(block.contains("etcd-certificates:/certificates:ro"), "\(block)")
    }
    #expect(
      Self.block(of: "etcd-certificates", in: config.output).contains(
        "- etcd-certificates\n    - /certificates\n    - etcd1,etcd2,etcd3,localhost,127.0.0.1"))
    let dockerfile = try String(contentsOf: repositoryFile("Dockerfile"), encoding: .utf8)
    #expect(dockerfile.contains("COPY Scripts/etcd_certificates.sh /usr/local/bin/etcd-certificates"))
    // `up counter-a counter-b profile-ha`, as the README says, starts the cluster alone: what
    // those depend on, and what that depends on, is in the profile.
    var started = Set(["counter-a", "counter-b", "profile-ha"])
    var next = Array(started)
    while let service = next.popLast() {
      let block = Self.block(of: service, in: config.output)
      let needed = block.matches(of: /\n      ([a-z0-9-]+):\n        condition/).map { String($0.1) }
      for dependency in needed where started.insert(dependency).inserted { next.append(dependency) }
    }
    #expect(started == Set(Self.haServices), "\(started)")
    // etcd's client port is for the brokers only: not published.
    for member in ["etcd1", "etcd2", "etcd3"] {
      #expect(!Self.block(of: member, in: config.output).contains("ports:"))
    }
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
