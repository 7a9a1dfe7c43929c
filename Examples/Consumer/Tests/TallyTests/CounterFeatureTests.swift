import Composable
import Observation
import SharedBroker
import SharedBrokerTesting
import Tally
import Testing

/// The library guide's features (Composable's "Writing a feature" and "Testing with the
/// fixture" articles), tested as the guide tests them, from a package of their own.
@MainActor
@Suite(.timeLimit(.minutes(1)), .disabled(if: TallyTests.wrongAssertions))
struct CounterFeatureTests {
  @Test func increment() async {
    let store = TestStore(initialState: CounterFeature.State(stats: Shared(Stats()))) {
      CounterFeature()
    }
    await store.send(.incrementButtonTapped) { $0.stats.count = 1 }
    await store.send(.isPrimeButtonTapped) { $0.alert = AlertState(title: "Not prime") }
    await store.send(\.alert.dismiss) { $0.alert = nil }
  }

  @Test func aPresentedCounterSharesTheParentsStatistics() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let store = TestStore(initialState: AppFeature.State()) {
        AppFeature()
      } withDependencies: {
        $0.brokerClient = client
      }
      try await client.waitUntilConnected()
      await store.send(.openSecondCounter) {
        $0.destination = .secondCounter(CounterFeature.State(stats: $0.$stats))
      }
      await store.send(\.destination.secondCounter.incrementButtonTapped) {
        $0.stats.count = 1
      }
      #expect(store.state.counter.stats.count == 1)
      await store.send(\.destination.dismiss) { $0.destination = nil }
      try await client.waitUntilConfirmed()
    }
  }

  @Test func aViewRendersAgainOnlyForWhatItRead() async throws {
    try await withBrokerFixture { fixture in
      let client = fixture.makeClient()
      let store = withDependencies {
        $0.brokerClient = client
      } operation: {
        Store(initialState: AppFeature.State()) { AppFeature() }
      }
      try await client.waitUntilConnected()

      // Swift's Observation tells at once whether a change touched what was read.
      let countChanged = LockIsolated(false)
      withObservationTracking {
        _ = store.counter.stats.count
      } onChange: {
        countChanged.setValue(true)
      }
      store.send(.counter(.isPrimeButtonTapped))
      #expect(!countChanged.value)

      let (renders, rendered) = AsyncStream<Int>.makeStream()
      let view = observe { rendered.yield(store.counter.stats.count) }
      store.send(.counter(.incrementButtonTapped))
      var shown: [Int] = []
      for await count in renders {
        shown.append(count)
        if count == 1 { break }
      }
      #expect(countChanged.value)
      #expect(shown == [0, 1])
      view.cancel()
    }
  }
}
