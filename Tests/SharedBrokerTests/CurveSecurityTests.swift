import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing
import ZeroMQ

@Suite(.timeLimit(.minutes(1)))
struct CurveSecurityTests {
  let server: CurveKeyPair
  let allowed: CurveKeyPair
  let stranger: CurveKeyPair

  init() throws {
    server = try CurveKeyPair.generate()
    allowed = try CurveKeyPair.generate()
    stranger = try CurveKeyPair.generate()
  }

  func fixture() throws -> BrokerFixture {
    try BrokerFixture(
      curve: .init(secretKey: server.secretKey, allowedClientKeys: [allowed.publicKey])
    )
  }

  func credentials(_ pair: CurveKeyPair, server: String? = nil) -> BrokerClient.Configuration {
    BrokerClient.Configuration(
      heartbeatInterval: .milliseconds(100),
      curve: .init(
        serverPublicKey: server ?? self.server.publicKey, publicKey: pair.publicKey,
        secretKey: pair.secretKey
      )
    )
  }

  @Test func allowedClientsReadAndWrite() async throws {
    let fixture = try fixture()
    defer { fixture.shutdown() }
    let writer = fixture.makeClient(configuration: credentials(allowed))
    let reader = fixture.makeClient(configuration: credentials(allowed))
    let written = await inProcess(writer) { Shared(wrappedValue: 0, .broker("secret")) }
    let read = await inProcess(reader) { Shared(wrappedValue: 0, .broker("secret")) }
    try await writer.waitUntilConnected()
    try await reader.waitUntilConnected()
    let stream = read.values
    written.withLock { $0 = 42 }
    #expect(await firstValue(in: stream) { $0 == 42 } == 42)
  }

  @Test func unknownKeysPlainTextAndWrongServerKeysGetNothing() async throws {
    let fixture = try fixture()
    defer { fixture.shutdown() }
    let owner = fixture.makeClient(configuration: credentials(allowed))
    let secret = await inProcess(owner) { Shared(wrappedValue: 0, .broker("secret")) }
    try await owner.waitUntilConnected()
    secret.withLock { $0 = 7 }
    try await owner.waitUntilConfirmed()

    // Each learns why, in words that point at the setting to fix.
    let intruders = [
      (fixture.makeClient(configuration: credentials(stranger)), "not on the broker's allow-list"),
      (
        fixture.makeClient(configuration: .init(heartbeatInterval: .milliseconds(100))),
        "requires CURVE"
      ),
      (
        fixture.makeClient(configuration: credentials(allowed, server: stranger.publicKey)),
        "is not the broker's public key"
      ),
    ]
    for (intruder, reason) in intruders {
      let value = await inProcess(intruder) { Shared(wrappedValue: -1, .broker("secret")) }
      value.withLock { $0 = 666 }
      let error = await #expect(throws: BrokerError.self) {
        try await intruder.waitUntilConnected(timeout: .seconds(5))
      }
      #expect(error?.code == .handshakeFailed)
      #expect("\(error.map { "\($0)" } ?? "")".contains(reason), "\(String(describing: error))")
      #expect(intruder.connectionState == .refused)
      #expect(value.wrappedValue == 666)  // only its own local write; it never learned 7
    }
    #expect((fixture.server?.statistics.deniedClients ?? 0) >= 1)
    try await secret.load()
    #expect(secret.wrappedValue == 7)
  }

  @Test func keysRoundTripThroughZ85() throws {
    let pair = try CurveKeyPair.generate()
    #expect(pair.publicKey.count == 40 && pair.secretKey.count == 40)
    #expect(try CurveKeyPair(secretKey: pair.secretKey) == pair)
    #expect(CurveKeyPair.encode(try CurveKeyPair.decode(pair.publicKey)) == pair.publicKey)
    #expect(throws: ZMQError.self) { try CurveKeyPair.decode("not a key") }
  }
}
