import Foundation
import SharedBroker
import SharedBrokerServer
import Sharing
import Synchronization
import Testing

/// A client meets a broker of an older protocol, as in a deployment that upgraded its programs
/// before their broker.
@Suite(.timeLimit(.minutes(1)))
struct ProtocolVersionTests {
  /// A broker of version 4 refuses `HELLO 5`: the client fails its wait at once with the
  /// broker's words and what to do, keeps its mutation, keeps saying `HELLO`, and writes it once
  /// the broker (upgraded) welcomes it.
  @Test func aBrokerOfAnOlderProtocolRefusesAtOnceAndTheMutationWaits() async throws {
    let upgraded = Mutex(false)
    let broker = try FakeBroker.holdingWrites { request in
      guard case .hello(_, let version) = request, !upgraded.withLock({ $0 }) else { return nil }
      let words = "unsupported protocol version \"\(version)\" (this broker speaks 4)"
      return [.error(code: .version, message: words, key: nil, write: nil)]
    }
    defer { broker.stop() }
    var writes = broker.writes

    let client = BrokerClient(endpoint: broker.endpoint)
    defer { client.close() }
    let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
    count.withLock { $0 += 1 }
    let error = await #expect(throws: BrokerError.self) {
      try await client.waitUntilConnected(timeout: .seconds(30))
    }
    #expect(error?.code == .handshakeFailed, "\(String(describing: error))")
    #expect(
      client.handshakeFailureReason
        == #"the broker does not speak this client's protocol (unsupported protocol version "5" "#
        + #"(this broker speaks 4)): run a broker of this release or newer"#)
    #expect(client.connectionState != .connected)
    #expect(broker.requests.allSatisfy { if case .write = $0 { false } else { true } })

    // Refused, it says HELLO again, and the broker's next welcome lifts the refusal.
    upgraded.withLock { $0 = true }
    for await state in client.connectionStates where state == .connected { break }
    try await client.waitUntilConnected()
    #expect(client.handshakeFailureReason == nil)
    let write = await writes.next()
    #expect(write?.value == "1" && write?.base == 1)
  }
}
