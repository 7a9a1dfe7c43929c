import Clocks
import Composable
import TestSupport
import Testing

/// A navigation stack with two kinds of screen, written as TCA's documentation writes one.
@Reducer
private struct Navigator {
  @ObservableState
  struct State: Equatable {
    var path = StackState<Path.State>()
    var log: [String] = []
  }
  enum Action {
    case path(StackActionOf<Path>)
    case showCounterTapped
    case showTimerTapped
  }
  @Reducer
  enum Path {
    case counter(StackCounter)
    case timer(Ticker)
  }
  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .showCounterTapped:
        state.path.append(.counter(StackCounter.State()))
        return .none
      case .showTimerTapped:
        state.path.append(.timer(Ticker.State()))
        return .none
      case .path(.element(id: _, action: .counter(.delegate(.saved(let count))))):
        state.log.append("saved \(count)")
        return .none
      case .path:
        return .none
      }
    }
    .forEach(\.path, action: \.path)
  }
}

extension Navigator.Path.State: Equatable {}

/// A screen that counts, tells its parent and pops itself.
@Reducer
private struct StackCounter {
  @ObservableState
  struct State: Equatable { var count = 0 }
  enum Action {
    case delegate(Delegate)
    case incrementTapped
    case saveTapped
    @CasePathable enum Delegate { case saved(Int) }
  }
  @Dependency(\.dismiss) var dismiss
  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .delegate:
        return .none
      case .incrementTapped:
        state.count += 1
        return .none
      case .saveTapped:
        return .run { [count = state.count, dismiss] send in
          await send(.delegate(.saved(count)))
          await dismiss()
        }
      }
    }
  }
}

@MainActor
@Suite(.mainSerialExecutor) struct StackTests {
  @Test func screensArePushedAndDrivenByCaseKeyPath() async {
    let store = TestStore(initialState: Navigator.State()) { Navigator() }
    await store.send(.showCounterTapped) { $0.path[id: 0] = .counter(StackCounter.State()) }
    await store.send(\.path[id: 0].counter.incrementTapped) {
      $0.path[id: 0, case: \.counter]?.count = 1
    }
    await store.send(.showTimerTapped) { $0.path.append(.timer(Ticker.State())) }
    #expect(store.state.path.ids == [0, 1])
  }

  @Test func dismissFromAScreenPopsIt() async {
    let store = TestStore(initialState: Navigator.State()) { Navigator() }
    await store.send(.showTimerTapped) { $0.path.append(.timer(Ticker.State())) }
    await store.send(.showCounterTapped) { $0.path.append(.counter(StackCounter.State())) }
    await store.send(\.path[id: 1].counter.saveTapped)
    await store.receive(\.path[id: 1].counter.delegate.saved, 0) { $0.log = ["saved 0"] }
    await store.receive(\.path.popFrom, 1) { $0.path.removeLast() }
    #expect(store.state.path.ids == [0])
  }

  @Test func poppingAScreenCancelsItsEffects() async {
    let clock = TestClock()
    let store = TestStore(initialState: Navigator.State()) {
      Navigator()
    } withDependencies: {
      $0.continuousClock = clock
    }
    await store.send(.showTimerTapped) { $0.path.append(.timer(Ticker.State())) }
    await store.send(\.path[id: 0].timer.task)
    await clock.advance(by: .seconds(1))
    await store.receive(\.path[id: 0].timer.tick) {
      $0.path[id: 0, case: \.timer]?.ticks = 1
    }
    await store.send(.path(.popFrom(id: 0))) { $0.path = [] }
    // The timer ended with the screen: time passing sends nothing, and nothing is in flight.
    await clock.advance(by: .seconds(5))
  }

  @Test func aPushedScreenTakesTheIdItNamesAndLaterOnesCountOn() async {
    let store = TestStore(initialState: Navigator.State()) { Navigator() }
    await store.send(.path(.push(id: 0, state: .counter(StackCounter.State())))) {
      $0.path[id: 0] = .counter(StackCounter.State())
    }
    await store.send(.showTimerTapped) { $0.path.append(.timer(Ticker.State())) }
    #expect(store.state.path.ids == [0, 1])
  }

  @Test func idsCountFromZeroInEveryStore() {
    for _ in 1...2 {
      let store = Store(initialState: Navigator.State()) { Navigator() }
      store.send(.showCounterTapped)
      store.send(.showTimerTapped)
      #expect(store.path.ids == [0, 1])
    }
  }

  @Test func anActionForAScreenThatIsGoneIsReported() async {
    let store = TestStore(initialState: Navigator.State()) { Navigator() }
    await withKnownIssue {
      await store.send(\.path[id: 3].counter.incrementTapped)
    } matching: { issue in
      issue.description.contains("an action for a missing element (id: #3)")
    }
    await withKnownIssue {
      await store.send(.path(.popFrom(id: 3)))
    } matching: { issue in
      issue.description.contains(#""popFrom" action for a missing element"#)
    }
  }

  @Test func aPushWithATakenOrUnknownIdIsReported() async {
    let store = TestStore(initialState: Navigator.State()) { Navigator() }
    await store.send(.showCounterTapped) { $0.path.append(.counter(StackCounter.State())) }
    await withKnownIssue {
      await store.send(.path(.push(id: 0, state: .timer(Ticker.State()))))
    } matching: { issue in
      issue.description.contains("already contains (id: #0)")
    }
    await withKnownIssue {
      await store.send(.path(.push(id: 7, state: .timer(Ticker.State()))))
    } matching: { issue in
      issue.description.contains("expected #1 or earlier, received #7")
    }
  }

  @Test func theCaseKeyPathOfAnElementExtractsOnlyThatElement() {
    let action = Navigator.Action.path(.element(id: 2, action: .counter(.incrementTapped)))
    let atTwo: Void? = action[case: \.path[id: 2].counter.incrementTapped]
    let atOne: Void? = action[case: \.path[id: 1].counter.incrementTapped]
    #expect(atTwo != nil)
    #expect(atOne == nil)
  }

  @Test func stackStateIsACollectionWithIds() {
    var stack: StackState<String> = ["a", "b"]
    stack.append("c")
    stack.append(contentsOf: ["d", "e"])
    #expect(Array(stack) == ["a", "b", "c", "d", "e"])
    let ids = stack.ids
    #expect(ids.count == 5 && ids.elements == ids.sorted())
    #expect(stack.popLast() == "e")
    #expect(stack.removeLast() == "d")
    #expect(stack[id: ids[1]] == "b")
    stack[id: ids[1]] = "B"
    #expect(stack[1] == "B")
    stack.pop(to: ids[1])
    #expect(stack.ids.elements == Array(ids.prefix(2)))
    stack.pop(from: ids[1])
    #expect(Array(stack) == ["a"])
    // Equality is by element, as in TCA: ids are not compared.
    #expect(stack == ["a"])
  }
}
