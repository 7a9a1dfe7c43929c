import Clocks
import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing

/// The broker forgets clients that went silent (a SIGKILLed process never says goodbye), and
/// keeps the ones that still ping.
@Suite(.timeLimit(.minutes(1)))
struct ClientExpiryTests {
  @Test func silentClientsAreForgottenAndLiveOnesKept() async throws {
    let clock = TestClock()
    let fixture = try BrokerFixture(clientTimeout: .seconds(60), clock: clock)
    defer { fixture.shutdown() }

    let gone = fixture.makeClient()
    let goneCount = await inProcess(gone) { Shared(wrappedValue: 0, .broker("count")) }
    try await gone.waitUntilConnected()
    goneCount.withLock { $0 += 1 }
    try await gone.waitUntilConfirmed()
    gone.close()

    let live = fixture.makeClient()
    let liveCount = await inProcess(live) { Shared(wrappedValue: 0, .broker("count")) }
    try await live.waitUntilConnected()
    #expect(fixture.server?.statistics.clients == 2)

    // Half the timeout later the live client is heard (its write is handled after that moment).
    await clock.advance(by: .seconds(30))
    liveCount.withLock { $0 += 1 }
    try await live.waitUntilConfirmed()
    #expect(fixture.server?.statistics.forgottenClients == 0)

    // The silent one passes the timeout; the live one, heard 31 s ago, does not.
    await clock.advance(by: .seconds(31))
    liveCount.withLock { $0 += 1 }
    try await live.waitUntilConfirmed()
    let statistics = try #require(fixture.server?.statistics)
    #expect(statistics.forgottenClients == 1)
    #expect(statistics.clients == 1)
    #expect(liveCount.wrappedValue == 3)

    // Its exactly-once record is gone with it; the value stays.
    let reply = try #require(
      try exchange(BrokerMessage.get(client: gone.id, key: "count").frames, with: fixture.endpoint))
    guard
      case .snapshot(_, let version, let lastWrite, let value, _) = try BrokerMessage(frames: reply)
    else {
      Issue.record("expected a snapshot, got \(reply)")
      return
    }
    #expect(version == 3)
    #expect(lastWrite == 0)
    #expect(String(decoding: value, as: UTF8.self) == "3")
  }
}
