import Testing

@testable import SharedBrokerServer

struct BrokerConfigurationTests {
  @Test(arguments: [
    ("tcp://0.0.0.0:5555", nil, "tcp://host1:5555"),
    ("tcp://[::]:5555", nil, "tcp://host1:5555"),
    ("tcp://127.0.0.1:40123", nil, "tcp://127.0.0.1:40123"),
    ("tcp://0.0.0.0:5555", "tcp://broker-a:5555", "tcp://broker-a:5555"),
    ("ipc:///tmp/broker", nil, "ipc:///tmp/broker"),
  ])
  func aClusterBrokerAdvertisesWhereOthersReachIt(bound: String, advertise: String?, expected: String) {
    let configuration = BrokerConfiguration(advertise: advertise)
    #expect(configuration.advertised(bound: bound, hostName: "host1") == expected)
  }
}

extension BrokerConfigurationTests {
  /// The PUB socket listens next to the ROUTER, or on a port the system picks when the ROUTER's
  /// is picked too (port 1, next to port 0, is no one's to take).
  @Test(arguments: [
    ("tcp://0.0.0.0:5555", nil, "tcp://0.0.0.0:5556"),
    ("tcp://127.0.0.1:*", nil, "tcp://127.0.0.1:*"),
    ("tcp://127.0.0.1:0", nil, "tcp://127.0.0.1:*"),
    ("tcp://127.0.0.1:0", "tcp://127.0.0.1:7000", "tcp://127.0.0.1:7000"),
    ("ipc:///tmp/broker", nil, "ipc:///tmp/broker.pub"),
  ])
  func thePublisherListensNextToTheRouter(listen: String, publish: String?, expected: String) {
    let configuration = BrokerConfiguration(listen: listen, publish: publish)
    #expect(configuration.publishEndpoint == expected)
  }
}
