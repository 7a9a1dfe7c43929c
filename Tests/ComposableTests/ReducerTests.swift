import Clocks
import Composable
import Testing
import TestSupport

@MainActor
@Suite(.mainSerialExecutor) struct ReducerTests {
  @Reducer
  struct Parent {
    @ObservableState
    struct State: Equatable {
      var child: Counter.State?
      var rows: IdentifiedArrayOf<Row> = []
      var log: [String] = []
    }

    struct Row: Equatable, Identifiable {
      let id: Int
      var counter = Counter.State()
    }
    enum Action: Equatable, Sendable {
      case child(Counter.Action)
      case rows(IdentifiedAction<Int, Counter.Action>)
      case presentChild
      case dismissChild
      case removeRow(Int)
      case log(String)
    }

    var includeLogger: Bool

    var body: some ReducerOf<Self> {
      CombineReducers {
        Reduce { state, action in
          switch action {
          case .presentChild: state.child = Counter.State()
          case .dismissChild: state.child = nil
          case let .removeRow(id): state.rows.remove(id: id)
          case .child, .rows, .log: break
          }
          return .none
        }
        if includeLogger {
          Reduce { state, action in
            if case let .log(message) = action { state.log.append(message) }
            return .none
          }
        } else {
          EmptyReducer()
        }
      }
      .ifLet(\.child, action: \.child) { Counter() }
      .forEach(\.rows, action: \.rows) {
        Scope(state: \.counter, action: \.self) { Counter() }
      }
    }
  }

  @Test func builderConditionals() async {
    let withLogger = TestStore(initialState: Parent.State()) { Parent(includeLogger: true) }
    await withLogger.send(.log("hi")) { $0.log = ["hi"] }
    let withoutLogger = TestStore(initialState: Parent.State()) { Parent(includeLogger: false) }
    await withoutLogger.send(.log("hi"))
  }

  @Test func ifLetRunsChildAndCancelsItsEffectsOnDismiss() async {
    let clock = TestClock()
    let store = TestStore(initialState: Parent.State()) {
      Parent(includeLogger: false)
    } withDependencies: {
      $0.continuousClock = clock
    }
    await store.send(.presentChild) { $0.child = Counter.State() }
    await store.send(.child(.increment)) { $0.child?.count = 1 }
    await store.send(.child(.delayedIncrement))
    await store.send(.dismissChild) { $0.child = nil }
    // Had the effect survived, this would deliver an action the test never asserts.
    await clock.advance(by: .seconds(2))
    await store.finish()
  }

  @Test func ifLetReportsActionsWithoutState() async {
    let store = Store(initialState: Parent.State()) { Parent(includeLogger: false) }
    withKnownIssue {
      store.send(.child(.increment))
    } matching: { $0.description.contains("child state was \"nil\"") }
  }

  @Test func forEachRoutesByIDAndCancelsRemovedElements() async {
    let clock = TestClock()
    let store = TestStore(
      initialState: Parent.State(rows: [Parent.Row(id: 1), Parent.Row(id: 2)])
    ) {
      Parent(includeLogger: false)
    } withDependencies: {
      $0.continuousClock = clock
    }
    await store.send(.rows(.element(id: 2, action: .increment))) {
      $0.rows[id: 2]?.counter.count = 1
    }
    await store.send(.rows(.element(id: 1, action: .delayedIncrement)))
    await store.send(.rows(.element(id: 2, action: .delayedIncrement)))
    await store.send(.removeRow(1)) { $0.rows.remove(id: 1) }
    await clock.advance(by: .seconds(1))
    await store.receive(.rows(.element(id: 2, action: .delayedIncrementFinished))) {
      $0.rows[id: 2]?.counter.count = 2
    }
    await store.finish()
  }

  @Test func forEachReportsMissingElements() {
    let store = Store(initialState: Parent.State()) { Parent(includeLogger: false) }
    withKnownIssue {
      store.send(.rows(.element(id: 9, action: .increment)))
    } matching: { $0.description.contains("missing element") }
  }

  @Test func scopeOnEnumState() async {
    let store = TestStore(initialState: Destination.counter(Counter.State())) {
      Scope(state: \.counter, action: \.self) { Counter() }
    }
    await store.send(.increment) { $0 = .counter(Counter.State(count: 1)) }
    let empty = TestStore(initialState: Destination.empty) {
      Scope(state: \.counter, action: \.self) { Counter() }
    }
    await empty.send(.increment)
  }
}

@CasePathable
private enum Destination: Equatable { case counter(Counter.State), empty }
