import Foundation
import SharedBroker
import Sharing
import ZeroMQ

extension Runs {
  /// The brokers the permissions section compares, each written to by one CURVE client.
  enum AllowListShape: CaseIterable {
    /// Plain text, no allow-list: what CURVE itself costs.
    case plain
    /// CURVE and a one-line allow-list that lets the writer do everything.
    case oneKey
    /// CURVE and an allow-list of 1,000 keys, each limited by patterns, the writer's among them.
    case thousandKeys

    var name: String {
      switch self {
      case .plain: "plain text, no allow-list"
      case .oneKey: "CURVE, allow-list of 1 key (every key)"
      case .thousandKeys: "CURVE, allow-list of 1,000 keys with read and write patterns"
      }
    }
  }

  /// Writes `writes` values of `bench`, `pace` µs apart, through a broker of `shape`; returns
  /// the broker's CPU time per write (µs).
  func permissionsCost(_ shape: AllowListShape, writes: Int, pace: Double) async throws -> Double {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("bench-permissions-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let server = try CurveKeyPair.generate()
    let writer = try CurveKeyPair.generate()
    var extra: [String] = []
    var curve: BrokerClient.CurveCredentials?
    if shape != .plain {
      let secret = directory.appendingPathComponent("server.key").path
      let list = directory.appendingPathComponent("allowed.txt").path
      try "\(server.secretKey)\n".write(toFile: secret, atomically: true, encoding: .utf8)
      try Self.allowList(shape, writer: writer.publicKey).write(
        toFile: list, atomically: true, encoding: .utf8)
      extra = ["--curve-secret-file", secret, "--allow-keys", list]
      curve = BrokerClient.CurveCredentials(
        serverPublicKey: server.publicKey, publicKey: writer.publicKey,
        secretKey: writer.secretKey)
    }
    let broker = try BrokerProcess(bin: bin, extra: extra)
    defer { broker.stop() }
    let client = BrokerClient(
      endpoint: broker.router, configuration: .init(curve: curve), logger: logger)
    defer { client.close() }
    let stats = withDependencies {
      $0.brokerClient = client
    } operation: {
      Shared(wrappedValue: Reader.Stats(), .broker("bench"))
    }
    try await client.waitUntilConnected()
    let brokerPID = broker.child.process.processIdentifier
    let before = cpuMicroseconds(pid: brokerPID)
    let start = now()
    for count in 1...writes {
      pause(until: start + UInt64(count - 1) * UInt64(pace * 1_000))
      stats.withLock { $0.count = count }
    }
    try await client.waitUntilConfirmed(timeout: .seconds(60))
    let used = cpuMicroseconds(pid: brokerPID) - before
    // Confirmed, none refused: the broker applied every write it was sent.
    guard client.refusedWriteCount == 0, stats.wrappedValue.count == writes else {
      throw BenchmarkError("the broker did not apply the writes with \(shape.name)")
    }
    return used / Double(writes)
  }

  /// The allow-list file of `shape`: for 1,000 keys, 999 others first (each with patterns of
  /// its own) and the writer's last, whose write permission is its second pattern.
  static func allowList(_ shape: AllowListShape, writer: String) throws -> String {
    switch shape {
    case .plain:
      return ""
    case .oneKey:
      return "\(writer)\n"
    case .thousandKeys:
      var lines = try (0..<999).map { index in
        "\(try CurveKeyPair.generate().publicKey) read=stats,team\(index).* write=team\(index).*,user.\(index).name\n"
      }
      lines.append("\(writer) read=stats,profile.*,user.*.name write=dashboard.*,bench*,other\n")
      return lines.joined()
    }
  }
}
