import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing
import TestSupport

/// An independent client (Python with pyzmq, written from PROTOCOL.md alone) reads and writes a
/// key next to a Swift client: proof that the document is complete.
@Suite(.timeLimit(.minutes(1)))
struct ProtocolDocumentTests {
  static let script = repositoryFile("Scripts/protocol_client.py")

  @Test func pythonClientSpeaksTheProtocol() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let stats = await inProcess(client) { Shared(wrappedValue: Stats(), .broker("stats")) }
      try await client.waitUntilConnected()
      stats.withLock { $0.count = 5 }
      try await client.waitUntilConfirmed()
      let updates = stats.values

      let (status, output) = try await runCommand(
        "/usr/bin/python3", [Self.script.path, fixture.endpoint, "stats", "count", "3"]
      )
      #expect(status == 0, "python3 said: \(output)")
      // The value is the last line; anything before it is Python's complaint.
      let lastLine = output.split(separator: "\n").last.map(String.init) ?? ""
      let written = try JSONDecoder().decode(Stats.self, from: Data(lastLine.utf8))
      #expect(written == Stats(count: 8))
      #expect(await firstValue(in: updates) { $0.count == 8 } == Stats(count: 8))
    }
  }

  /// The same client checks the protocol's rules: HELLO first and the versions it welcomes,
  /// refused writes that name themselves, one form per number, PING and PONG versions, and SEED.
  @Test func pythonClientFindsTheRulesAsDocumented() async throws {
    try await withBrokerFixture { fixture in
      // Twice: the checks use keys of their own, so they hold on a broker already used.
      for _ in 0..<2 {
        let (status, output) = try await runCommand(
          "/usr/bin/python3", [Self.script.path, fixture.endpoint, "--check-rules"]
        )
        #expect(status == 0, "python3 said: \(output)")
        #expect(output.contains("rules: 21 checked"), "\(output)")
      }
    }
  }
}
