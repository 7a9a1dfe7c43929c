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
