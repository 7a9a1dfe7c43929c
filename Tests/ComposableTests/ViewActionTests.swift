import Composable
import Testing

/// A login feature whose view actions are kept apart from its internal ones.
@Reducer
private struct Login {
  @ObservableState
  struct State: Equatable {
    var email = ""
    var isLoggedIn = false
  }
  enum Action: ViewAction {
    case loginResponse(Bool)
    case view(View)
    enum View: BindableAction {
      case binding(BindingAction<State>)
      case loginButtonTapped
    }
  }
  var body: some ReducerOf<Self> {
    BindingReducer(action: \.view)
    Reduce { state, action in
      switch action {
      case .loginResponse(let success):
        state.isLoggedIn = success
        return .none
      case .view(.loginButtonTapped):
        return .send(.loginResponse(!state.email.isEmpty))
      case .view(.binding):
        return .none
      }
    }
  }
}

/// What a SwiftUI view would be: it holds the store and sends view actions.
@MainActor
@ViewAction(for: Login.self)
private struct LoginScreen {
  let store: StoreOf<Login>

  func fill(email: String) {
    send(.binding(.set(\.email, email)))
  }

  func logIn() {
    send(.loginButtonTapped)
  }
}

@MainActor
@Suite struct ViewActionTests {
  @Test func aViewSendsItsActionsWrappedInView() {
    let screen = LoginScreen(store: Store(initialState: Login.State()) { Login() })
    screen.fill(email: "blob@example.com")
    screen.logIn()
    #expect(screen.store.email == "blob@example.com")
    #expect(screen.store.isLoggedIn)
  }
}
