public import Etcd
public import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A real etcd cluster of `members` processes on loopback ports, in a temporary directory, for
/// one test: `make test` installs `etcd-server`. Members can be killed and started again with
/// their data, and the whole cluster can be replaced by an empty one. With `tls`, the members
/// speak TLS to their clients and check the clients' certificates (`--client-cert-auth`), with
/// the certificates `Scripts/etcd_certificates.sh` makes in the cluster's directory.
public final class EtcdCluster: Sendable {
  /// One member's name and loopback ports.
  public struct Member: Sendable {
    public let name: String
    public let clientPort: Int
    public let peerPort: Int
    let tls: Bool
    public var clientURL: String { "\(tls ? "https" : "http")://127.0.0.1:\(clientPort)" }
    public var peerURL: String { "http://127.0.0.1:\(peerPort)" }
  }

  /// With TLS, the files a client gives to trust the members (`ca.pem`) and to be trusted by
  /// them (`broker.pem`, `broker-key.pem`).
  public let certificates: URL?
  /// The TLS settings of a client the members trust, with TLS.
  public var clientTLS: EtcdTLS? {
    certificates.map {
      EtcdTLS(
        caCertificateFile: $0.appendingPathComponent("ca.pem").path,
        certificateFile: $0.appendingPathComponent("broker.pem").path,
        privateKeyFile: $0.appendingPathComponent("broker-key.pem").path)
    }
  }

  /// The members, in the order they were made.
  public let members: [Member]
  /// Where the members keep their data.
  public let directory: URL
  private let token = "sm-test-\(UUID().uuidString.prefix(8))"
  private let processes: Mutex<[ChildProcess?]>

  /// `etcd://…` for the broker's `--store`.
  public var store: String { "etcd://" + members.map { "127.0.0.1:\($0.clientPort)" }.joined(separator: ",") }
  /// The members' client URLs.
  public var clientURLs: [String] { members.map(\.clientURL) }

  /// Starts `count` members and waits until they serve.
  public init(members count: Int = 3, tls: Bool = false) async throws {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("etcd-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    if tls {
      let certificates = directory.appendingPathComponent("certificates")
      let made = try await runCommand(
        "/bin/sh",
        [repositoryFile("Scripts/etcd_certificates.sh").path, certificates.path, "127.0.0.1"])
      guard made.status == 0 else { throw EtcdDidNotStart(reason: "no certificates", output: made.output) }
      self.certificates = certificates
    } else {
      certificates = nil
    }
    let ports = try freeLoopbackPorts(2 * count)
    members = (0..<count).map {
      Member(name: "m\($0)", clientPort: ports[2 * $0], peerPort: ports[2 * $0 + 1], tls: tls)
    }
    processes = Mutex(Array(repeating: nil, count: count))
    for index in members.indices { try await start(index) }
    try await waitUntilServing()
  }

  /// Starts member `index` (again, with its data if it ran before).
  public func start(_ index: Int) async throws {
    let member = members[index]
    let initial = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
    let process = try await ChildProcess(
      executable: URL(fileURLWithPath: "/usr/bin/etcd"),
      [
        "--name", member.name, "--data-dir", directory.appendingPathComponent(member.name).path,
        "--listen-client-urls", member.clientURL, "--advertise-client-urls", member.clientURL,
        "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
        "--initial-cluster", initial, "--initial-cluster-token", token,
        "--initial-cluster-state", "new",
        // Fast elections on loopback; values up to a 1 MiB value, base64 twice over.
        "--heartbeat-interval", "50", "--election-timeout", "500",
        "--max-request-bytes", "4194304", "--log-level", "warn", "--logger", "zap",
      ] + (certificates.map { files in
        [
          "--cert-file", files.appendingPathComponent("server.pem").path,
          "--key-file", files.appendingPathComponent("server-key.pem").path,
          "--trusted-ca-file", files.appendingPathComponent("ca.pem").path, "--client-cert-auth",
        ]
      } ?? []))
    processes.withLock { $0[index] = process }
  }

  /// SIGKILLs member `index` and waits for it to exit.
  public func kill(_ index: Int) async {
    guard let process = processes.withLock({ $0[index] }) else { return }
    process.signal(SIGKILL)
    _ = await process.waitForExit()
    processes.withLock { $0[index] = nil }
  }

  /// Waits until the cluster answers a linearizable read (it has a leader and a quorum).
  public func waitUntilServing(timeout: Duration = .seconds(30)) async throws {
    let client = try EtcdClient(
      endpoints: clientURLs, requestTimeout: .milliseconds(500), tls: clientTLS)
    defer { Task { try? await client.shutdown() } }
    let deadline = ContinuousClock.now + timeout
    while true {
      do {
        _ = try await client.range(Data("probe".utf8))
        return
      } catch {
        guard ContinuousClock.now < deadline else {
          throw EtcdDidNotStart(reason: "\(error)", output: printed)
        }
        try await Task.sleep(for: .milliseconds(50))  // polling for a condition, with a deadline
      }
    }
  }

  /// What the members printed.
  public var printed: String {
    processes.withLock { $0 }.compactMap { $0?.printed.suffix(2_000) }.joined(separator: "\n---\n")
  }

  /// Stops every member and removes the data.
  public func shutdown() async {
    for index in members.indices { await kill(index) }
    try? FileManager.default.removeItem(at: directory)
  }
}

/// The cluster did not answer in time.
public struct EtcdDidNotStart: Error, CustomStringConvertible {
  /// The last error.
  public let reason: String
  /// What the members printed.
  public let output: String
  /// A readable explanation.
  public var description: String { "etcd did not serve: \(reason)\n\(output)" }
}

/// Ports the kernel had free on 127.0.0.1, all held until every one is picked, so none repeats.
public func freeLoopbackPorts(_ count: Int) throws -> [Int] {
  var descriptors: [Int32] = []
  defer { for descriptor in descriptors { close(descriptor) } }
  var ports: [Int] = []
  for _ in 0..<count {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
    descriptors.append(descriptor)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
      }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    ports.append(Int(UInt16(bigEndian: address.sin_port)))
  }
  return ports
}

/// Runs `body` with a fresh etcd cluster, shut down afterwards whatever happens.
public func withEtcdCluster<R>(
  members: Int = 3, tls: Bool = false, _ body: (EtcdCluster) async throws -> R
) async throws -> R {
  let cluster = try await EtcdCluster(members: members, tls: tls)
  do {
    let result = try await body(cluster)
    await cluster.shutdown()
    return result
  } catch {
    await cluster.shutdown()
    throw error
  }
}
