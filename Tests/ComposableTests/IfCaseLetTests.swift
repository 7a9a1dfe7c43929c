import Clocks
import Composable
import TestSupport
import Testing

/// An app that is either logged out or logged in; the logged-in screen runs a timer.
@Reducer
private struct Session {
  @ObservableState
  @CasePathable
  enum State: Equatable {
    case loggedIn(Clock.State)
    case loggedOut
  }
  enum Action {
    case logInTapped
    case logOutTapped
    case loggedIn(Clock.Action)
  }
  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .logInTapped:
        state = .loggedIn(Clock.State())
      case .logOutTapped:
        state = .loggedOut
      case .loggedIn:
        break
      }
      return .none
    }
    .ifCaseLet(\.loggedIn, action: \.loggedIn) { Clock() }
  }

  @Reducer
  struct Clock {
    @ObservableState
    struct State: Equatable { var ticks = 0 }
    enum Action { case start, tick }
    @Dependency(\.continuousClock) var clock
    var body: some ReducerOf<Self> {
      Reduce { state, action in
        switch action {
        case .start:
          return .run { send in
            for await _ in clock.timer(interval: .seconds(1)) { await send(.tick) }
          }
        case .tick:
          state.ticks += 1
          return .none
        }
      }
    }
  }
}

@MainActor
@Suite(.mainSerialExecutor) struct IfCaseLetTests {
  @Test func theChildRunsInItsCaseAndItsEffectsEndWhenTheStateLeavesIt() async {
    let clock = TestClock()
    let store = TestStore(initialState: Session.State.loggedOut) {
      Session()
    } withDependencies: {
      $0.continuousClock = clock
    }
    await store.send(.logInTapped) { $0 = .loggedIn(Session.Clock.State()) }
    await store.send(\.loggedIn.start)
    await clock.advance(by: .seconds(1))
    await store.receive(\.loggedIn.tick) { $0 = .loggedIn(Session.Clock.State(ticks: 1)) }
    await store.send(.logOutTapped) { $0 = .loggedOut }
    await clock.advance(by: .seconds(5))
  }

  @Test func aChildActionInAnotherCaseIsReported() async {
    let store = TestStore(initialState: Session.State.loggedOut) { Session() }
    await withKnownIssue {
      await store.send(\.loggedIn.tick)
    } matching: { issue in
      issue.description.contains("child state was set to a different case")
    }
  }
}
