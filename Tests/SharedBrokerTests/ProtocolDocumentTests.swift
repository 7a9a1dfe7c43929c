import Foundation
import SharedBroker
import SharedBrokerTesting
import Sharing
import Testing

/// An independent client (Python with pyzmq, written from PROTOCOL.md alone) reads and writes a
/// key next to a Swift client: proof that the document is complete.
@Suite(.timeLimit(.minutes(1)))
struct ProtocolDocumentTests {
  static let script = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Scripts/protocol_client.py")

  @Test func pythonClientSpeaksTheProtocol() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let stats = await inProcess(client) { Shared(wrappedValue: Stats(), .broker("stats")) }
      try await client.waitUntilConnected()
      stats.withLock { $0.count = 5 }
      try await client.waitUntilConfirmed()
      let updates = stats.values

      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
      process.arguments = [Self.script.path, fixture.endpoint, "stats", "count", "3"]
      let output = Pipe()
      let errors = Pipe()
      process.standardOutput = output
      process.standardError = errors
      try process.run()
      let printed = output.fileHandleForReading.readDataToEndOfFile()
      let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      #expect(process.terminationStatus == 0, "python3 said: \(complaint)")

      let written = try JSONDecoder().decode(Stats.self, from: printed)
      #expect(written == Stats(count: 8))
      #expect(await firstValue(in: updates) { $0.count == 8 } == Stats(count: 8))
    }
  }
}
