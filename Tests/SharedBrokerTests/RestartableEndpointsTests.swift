import Dependencies
import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing
import ZeroMQ

struct RestartableEndpointsTests {
  private static func port(_ endpoint: String) -> Int { Int(endpoint.split(separator: ":").last!)! }

  @Test func portsLieOutsideTheEphemeralRange() throws {
    let bounds = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
      .split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    for _ in 0..<1_000 {
      let endpoints = RestartableEndpoints()
      let ports = [Self.port(endpoints.router), Self.port(endpoints.publisher)]
      #expect(ports[0] != ports[1])
      for port in ports { #expect(port >= 1_024 && port <= 65_535 && !(bounds[0]...bounds[1]).contains(port)) }
    }
  }

  @Test func aTakenPortIsSkippedAndOtherErrorsAreNot() throws {
    let context = try Context()
    defer { context.terminate() }
    let holder = try Socket(context: context, type: .router)
    defer { holder.close() }
    let taken = RestartableEndpoints()
    try holder.bind(taken.router)

    var tried: [RestartableEndpoints] = []
    let bound = try RestartableEndpoints.bind { endpoints in
      let server = BrokerServer(
        configuration: BrokerConfiguration(
          listen: tried.isEmpty ? taken.router : endpoints.router, publish: endpoints.publisher))
      tried.append(endpoints)
      try server.start()
      server.stop()
      return endpoints
    }
    #expect(tried.count == 2 && tried.last == bound)

    struct Unrelated: Error {}
    var calls = 0
    #expect(throws: Unrelated.self) {
      try RestartableEndpoints.bind { _ in
        calls += 1
        throw Unrelated()
      }
    }
    #expect(calls == 1)
  }

  @Test func aFixtureRestartsOnItsPortsWhileItsClientsReconnect() async throws {
    let fixture = try BrokerFixture(persistent: true)
    let client = fixture.makeClient()
    let count = withDependencies {
      $0.brokerClient = client
      $0.persistentReferences = PersistentReferences()
    } operation: { Shared(wrappedValue: 0, .broker("restarts")) }
    let before = fixture.endpoint
    for _ in 0..<3 {
      count.withLock { $0 += 1 }
      try fixture.restart()
    }
    try await client.waitUntilConfirmed()
    #expect(fixture.endpoint == before)
    #expect(count.wrappedValue == 3)
  }
}
