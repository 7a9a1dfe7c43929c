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
    case loggedIn(Ticker.State)
    case loggedOut
  }
  enum Action {
    case logInTapped
    case logOutTapped
    case loggedIn(Ticker.Action)
  }
  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .logInTapped:
        state = .loggedIn(Ticker.State())
      case .logOutTapped:
        state = .loggedOut
      case .loggedIn:
        break
      }
      return .none
    }
    .ifCaseLet(\.loggedIn, action: \.loggedIn) { Ticker() }
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
    await store.send(.logInTapped) { $0 = .loggedIn(Ticker.State()) }
    await store.send(\.loggedIn.task)
    await clock.advance(by: .seconds(1))
    await store.receive(\.loggedIn.tick) { $0 = .loggedIn(Ticker.State(ticks: 1)) }
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
