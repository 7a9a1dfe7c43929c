import Dependencies
import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing
import ZeroMQ

@Suite(.timeLimit(.minutes(1)))
struct ResilienceTests {
  @Test func restartedBrokerKeepsConfirmedWritesAndClientsResendPendingOnes() async throws {
    try await withBrokerFixture(persistent: true) { fixture in
      let client = fixture.makeClient()
      let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
      try await client.waitUntilConnected()
      for _ in 0..<10 { count.withLock { $0 += 1 } }
      try await client.waitUntilConfirmed()

      fixture.stop()
      #expect(await firstValue(in: client.connectionStates) { $0 == .disconnected } == .disconnected)
      // Mutations made while the broker is away stay pending locally and show at once.
      for _ in 0..<5 { count.withLock { $0 += 1 } }
      #expect(count.wrappedValue == 15)
      #expect(client.hasUnconfirmedWrites)

      try fixture.restart()
      try await client.waitUntilConfirmed()
      #expect(count.wrappedValue == 15)

      // A fresh client sees exactly what was confirmed: nothing lost, nothing applied twice.
      let reader = fixture.makeClient()
      let read = await inProcess(reader) { Shared(wrappedValue: 0, .broker("count")) }
      try await reader.waitUntilConnected()
      #expect(read.wrappedValue == 15)
    }
  }

  @Test func clientWithoutBrokerWorksLocallyAndReconcilesWhenItComes() async throws {
    // Reserve a port, then release it for the broker that starts later.
    let probe = try BrokerFixture()
    let endpoint = probe.endpoint
    let publisher = try #require(probe.server?.endpoints?.publisher)
    probe.shutdown()

    let client = BrokerClient(
      endpoint: endpoint,
      configuration: .init(heartbeatInterval: .milliseconds(50), missedHeartbeats: 3)
    )
    defer { client.close() }
    let stats = await inProcess(client) { Shared(wrappedValue: Stats(), .broker("stats")) }
    stats.withLock { $0.count += 1 }
    stats.withLock { $0.count += 1 }
    #expect(stats.wrappedValue.count == 2)
    #expect(client.connectionState == .connecting)
    #expect(stats.isLoading)

    let server = BrokerServer(configuration: .init(listen: endpoint, publish: publisher))
    try server.start()
    defer { server.stop() }
    try await client.waitUntilConfirmed()
    #expect(stats.wrappedValue.count == 2)
    #expect(server.statistics.writesApplied >= 1)
  }

  @Test func valueOfTheWrongTypeSetsLoadErrorAndKeepsTheLastGoodValue() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let stats = await inProcess(client) { Shared(wrappedValue: Stats(), .broker("stats")) }
      try await client.waitUntilConnected()
      stats.withLock { $0.count = 7 }
      try await client.waitUntilConfirmed()

      // Another client writes something that is not a Stats.
      let raw = try RawClient(fixture.endpoint, hello: "raw")
      let reply = try raw.request(
        .write(client: "raw", write: 1, key: "stats", base: 1, value: Data("\"garbage\"".utf8))
      )
      #expect(reply == .ack(key: "stats", write: 1, version: 2))

      try await stats.load()
      #expect(stats.loadError != nil)
      #expect(stats.wrappedValue.count == 7)

      // The next local write replaces the bad value.
      stats.withLock { $0.count += 1 }
      try await client.waitUntilConfirmed()
      #expect(stats.wrappedValue.count == 8)
    }
  }
}
