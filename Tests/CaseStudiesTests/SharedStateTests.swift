import CaseStudies
import Composable
import Testing
import TestSupport

@MainActor
@Suite(.mainSerialExecutor) struct SharedStateTests {
  @Test func counterChangesAreSeenByTheProfile() async {
    let store = TestStore(initialState: SharedStateFeature.State()) { SharedStateFeature() }
    await store.send(.counter(.incrementButtonTapped)) {
      $0.counter.stats = Stats(count: 1, maxCount: 1, minCount: 0, numberOfCounts: 1)
    }
    #expect(store.state.profile.stats.count == 1)
    await store.send(.counter(.decrementButtonTapped)) {
      $0.counter.stats.count = 0
      $0.counter.stats.numberOfCounts = 2
    }
    await store.send(.counter(.decrementButtonTapped)) {
      $0.counter.stats.count = -1
      $0.counter.stats.minCount = -1
      $0.counter.stats.numberOfCounts = 3
    }
    #expect(store.state.profile.stats == Stats(count: -1, maxCount: 1, minCount: -1, numberOfCounts: 3))
  }

  @Test func resetFromTheProfileZeroesTheCounter() async {
    let store = TestStore(
      initialState: SharedStateFeature.State(
        stats: Shared(value: Stats(count: 5, maxCount: 7, minCount: -2, numberOfCounts: 20)),
        currentTab: .profile
      )
    ) { SharedStateFeature() }
    await store.send(.profile(.resetCounterButtonTapped)) {
      $0.profile.stats = Stats()
    }
    #expect(store.state.counter.stats.count == 0)
    await store.send(.selectTab(.counter)) { $0.currentTab = .counter }
  }

  @Test func isPrimeAlert() async {
    let store = TestStore(
      initialState: SharedStateFeature.State(stats: Shared(value: Stats(count: 7)))
    ) { SharedStateFeature() }
    await store.send(.counter(.isPrimeButtonTapped)) {
      $0.counter.alert = AlertState(title: "👍 The number 7 is prime!")
    }
    await store.send(.counter(.alert(.dismiss))) { $0.counter.alert = nil }
    await store.send(.counter(.incrementButtonTapped)) {
      $0.counter.stats = Stats(count: 8, maxCount: 8, minCount: 0, numberOfCounts: 1)
    }
    await store.send(.counter(.isPrimeButtonTapped)) {
      $0.counter.alert = AlertState(title: "👎 The number 8 is not prime :(")
    }
  }

  @Test func unassertedSharedChangeFails() async {
    let store = TestStore(initialState: SharedStateFeature.State()) { SharedStateFeature() }
    await withKnownIssue {
      await store.send(.counter(.incrementButtonTapped))
    } matching: { $0.description.contains("State was not expected to change") }
  }

  @Test func wronglyAssertedSharedChangeFails() async {
    let store = TestStore(initialState: SharedStateFeature.State()) { SharedStateFeature() }
    await withKnownIssue {
      await store.send(.counter(.incrementButtonTapped)) { $0.counter.stats.count = 1 }
    } matching: { $0.description.contains("does not match expectation") }
  }

  @Test func primes() {
    #expect((-3...20).filter(isPrime) == [2, 3, 5, 7, 11, 13, 17, 19])
  }

  @Test func liveStoreObserversSeeTheOtherTab() {
    let store = Store(initialState: SharedStateFeature.State()) { SharedStateFeature() }
    let profile = store.scope(state: \.profile, action: \.profile)
    let counter = store.scope(state: \.counter, action: \.counter)
    var seen: [Int] = []
    let token = profile.observe(\.stats.count) { seen.append($0) }
    counter.send(.incrementButtonTapped)
    counter.send(.incrementButtonTapped)
    profile.send(.resetCounterButtonTapped)
    #expect(seen == [0, 1, 2, 0])
    #expect(counter.stats.count == 0)
    token.cancel()
  }
}
