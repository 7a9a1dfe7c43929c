import Foundation
import SharedBroker
import Sharing
import Testing
import TestSupport

/// The `broker` executable, killed for real.
@Suite(.timeLimit(.minutes(1)))
struct BrokerProcessTests {
  @Test func sigkilledBrokerWithDataLosesNoConfirmedWrite() async throws {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID())")
    defer { try? FileManager.default.removeItem(at: data) }
    let (first, router, publisher) = try await startBroker(["--data", data.path])

    let client = BrokerClient(
      endpoint: router, configuration: .init(heartbeatInterval: .milliseconds(100))
    )
    defer { client.close() }
    let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
    try await client.waitUntilConnected()
    for _ in 0..<100 { count.withLock { $0 += 1 } }
    try await client.waitUntilConfirmed()

    first.signal(SIGKILL)
    #expect(await first.waitForExit() == SIGKILL)
    for _ in 0..<50 { count.withLock { $0 += 1 } }

    let second = try await ChildProcess(
      "broker", ["--listen", router, "--publish", publisher, "--data", data.path]
    )
    _ = await second.waitForOutput(containing: "Broker listening")
    try await client.waitUntilConfirmed()
    #expect(count.wrappedValue == 150)

    let reader = BrokerClient(endpoint: router)
    defer { reader.close() }
    let read = await inProcess(reader) { Shared(wrappedValue: 0, .broker("count")) }
    try await reader.waitUntilConnected()
    #expect(read.wrappedValue == 150)

    second.signal(SIGTERM)
    #expect(await second.waitForExit() == 0)
  }

  @Test func badFlagsGiveUsageAndAFailingExit() async throws {
    let broker = try await ChildProcess("broker", ["--no-such-flag"])
    #expect(await broker.waitForExit() != 0)
    #expect(broker.printed.contains("Usage: broker"))
    let unsupported = try await ChildProcess("broker", ["--listen", "nonsense://x"])
    #expect(await unsupported.waitForExit() == 1)
    #expect(unsupported.printed.contains("cannot bind the listen endpoint nonsense://x"))
  }
}
