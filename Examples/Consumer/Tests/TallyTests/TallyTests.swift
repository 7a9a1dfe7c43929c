import Composable
import Foundation
import SharedBroker
import SharedBrokerTesting
import Tally
import Testing

/// Tests as a user writes them: `@MainActor` (stores live there), a broker in the process.
@MainActor
@Suite(.timeLimit(.minutes(1)))
struct TallyTests {
  /// Set by Scripts/consumer-check.sh for the run that must fail.
  nonisolated static let wrongAssertions = ProcessInfo.processInfo.environment["CONSUMER_WRONG_ASSERTIONS"] != nil

  @Test(.disabled(if: wrongAssertions))
  func incrementsReachAnotherProcess() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let store = TestStore(initialState: Tally.State()) { Tally() } withDependencies: {
        $0.brokerClient = client
      }
      try await client.waitUntilConnected()
      await store.send(.incrementButtonTapped) { $0.count = 1 }
      await store.send(.incrementButtonTapped) { $0.count = 2 }
      try await client.waitUntilConfirmed()

      // Another process: a client of its own, reading the same key.
      let other = fixture.makeClient()
      let read = withDependencies { $0.brokerClient = other } operation: {
        Shared(wrappedValue: 0, .broker("tally"))
      }
      try await other.waitUntilConnected()
      #expect(read.wrappedValue == 2)

      // Its reset reaches the store.
      let seen = store.state.$count.values
      read.withLock { $0 = 0 }
      for await count in seen where count == 0 { break }
      #expect(store.state.count == 0)
    }
  }

  @Test(.disabled(if: wrongAssertions))
  func aWrongAssertionIsRecorded() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let store = TestStore(initialState: Tally.State()) { Tally() } withDependencies: {
        $0.brokerClient = client
      }
      try await client.waitUntilConnected()
      await withKnownIssue {
        await store.send(.incrementButtonTapped) { $0.count = 2 }
      }
    }
  }

  /// Must fail: the reducer made the count 1.
  @Test(.enabled(if: wrongAssertions))
  func wrongAssertionFails() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let store = TestStore(initialState: Tally.State()) { Tally() } withDependencies: {
        $0.brokerClient = client
      }
      try await client.waitUntilConnected()
      await store.send(.incrementButtonTapped) { $0.count = 2 }
    }
  }

  /// Must fail: the shared count changed and the test did not say so.
  @Test(.enabled(if: wrongAssertions))
  func unassertedSharedChangeFails() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let store = TestStore(initialState: Tally.State()) { Tally() } withDependencies: {
        $0.brokerClient = client
      }
      try await client.waitUntilConnected()
      await store.send(.incrementButtonTapped)
    }
  }
}
