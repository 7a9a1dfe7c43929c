import Clocks
import Composable
import Testing
import TestSupport

@MainActor
@Suite(.mainSerialExecutor) struct StoreTests {
  @Test func sendReducesSynchronously() {
    let store = Store(initialState: Counter.State()) { Counter() }
    store.send(.increment)
    store.send(.increment)
    #expect(store.count == 2)
    #expect(store.state.count == 2)
  }

  @Test func reentrantSendsAreBufferedInFIFOOrder() {
    // An observer that sends while the store is sending must not run re-entrantly: its action
    // is queued behind the ones already buffered.
    let store = Store(initialState: Counter.State()) {
      Reduce<Counter.State, Counter.Action> { state, action in
        if case let .log(message) = action { state.log.append(message) }
        switch action {
        case .log("a"): return .merge(.send(.log("b")), .send(.log("c")))
        case .log("b"): return .send(.log("d"))
        default: return .none
        }
      }
    }
    var observed: [[String]] = []
    let token = store.observe(\.log) { log in
      observed.append(log)
      if log == ["a", "b", "c", "d"] { store.send(.log("e")) }
    }
    store.send(.log("a"))
    #expect(store.log == ["a", "b", "c", "d", "e"])
    #expect(observed == [[], ["a", "b", "c", "d"], ["a", "b", "c", "d", "e"]])
    token.cancel()
  }

  @Test func childStoreFollowsParent() {
    let parent = Store(initialState: ScopedParent.State()) { ScopedParent() }
    let child = parent.scope(state: \.counter, action: \.counter)
    child.send(.increment)
    #expect(parent.counter.count == 1)
    parent.send(.counter(.increment))
    #expect(child.count == 2)

    var seen: [Int] = []
    let token = child.observe(\.count) { seen.append($0) }
    parent.send(.other)  // not observed by the child: no duplicate call
    parent.send(.counter(.decrement))
    #expect(seen == [2, 1])
    token.cancel()
    parent.send(.counter(.decrement))
    #expect(seen == [2, 1])
  }

  @Test func observeSkipsDuplicates() {
    let store = Store(initialState: Counter.State()) { Counter() }
    var counts: [Int] = []
    let token = store.observe(\.count) { counts.append($0) }
    store.send(.log("no count change"))
    store.send(.increment)
    store.send(.log("still 1"))
    store.send(.decrement)
    #expect(counts == [0, 1, 0])
    withExtendedLifetime(token) {}
  }

  @Test func releasedObservationStopsObserving() {
    let store = Store(initialState: Counter.State()) { Counter() }
    var counts: [Int] = []
    do {
      let token = store.observe(\.count) { counts.append($0) }
      store.send(.increment)
      withExtendedLifetime(token) {}
    }
    store.send(.increment)
    #expect(counts == [0, 1])
  }

  @Test func valuesStreamsDistinctChanges() async {
    let store = Store(initialState: Counter.State()) { Counter() }
    var iterator = store.values(of: \.count).makeAsyncIterator()
    #expect(await iterator.next() == 0)
    store.send(.increment)
    #expect(await iterator.next() == 1)
  }

  @Test func storeTaskFinishesWithItsEffects() async {
    let clock = TestClock()
    let store = Store(initialState: Counter.State()) {
      Counter()
    } withDependencies: {
      $0.continuousClock = clock
    }
    let task = store.send(.delayedIncrement)
    #expect(!task.isFinished)
    await clock.advance(by: .seconds(1))
    await task.finish()
    #expect(store.count == 1)
  }

  @Test func releasingTheStoreCancelsItsEffects() async {
    let clock = TestClock()
    var task: StoreTask?
    do {
      let store = Store(initialState: Counter.State()) {
        Counter()
      } withDependencies: {
        $0.continuousClock = clock
      }
      task = store.send(.delayedIncrement)
    }
    #expect(task?.isCancelled == true)
    await task?.finish()
  }

  @Test func storeTaskCancel() async {
    let clock = TestClock()
    let store = Store(initialState: Counter.State()) {
      Counter()
    } withDependencies: {
      $0.continuousClock = clock
    }
    let task = store.send(.delayedIncrement)
    task.cancel()
    await task.finish()
    #expect(task.isCancelled)
    #expect(store.count == 0)
  }
}

@Reducer

private struct ScopedParent {
  @ObservableState
  struct State: Equatable { var counter = Counter.State(); var other = 0 }
  enum Action: Equatable, Sendable { case counter(Counter.Action), other }
  var body: some ReducerOf<Self> {
    Scope(state: \.counter, action: \.counter) { Counter() }
    Reduce { state, action in
      if case .other = action { state.other += 1 }
      return .none
    }
  }
}
