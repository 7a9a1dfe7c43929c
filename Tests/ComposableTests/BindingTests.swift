import Composable
import CustomDump
import TestSupport
import Testing

/// A sign-up form: every field is bound, and the reducer reacts to the name changing.
@Reducer
private struct SignUp {
  @ObservableState
  struct State: Equatable {
    var name = ""
    var acceptsTerms = false
    var canSubmit = false
  }
  enum Action: BindableAction, Equatable {
    case binding(BindingAction<State>)
    case submitTapped
  }
  var body: some ReducerOf<Self> {
    BindingReducer()
    Reduce { state, action in
      switch action {
      case .binding(\.name), .binding(\.acceptsTerms):
        state.canSubmit = !state.name.isEmpty && state.acceptsTerms
        return .none
      case .binding, .submitTapped:
        return .none
      }
    }
  }
}

/// The same form without ``BindingReducer``: its binding actions change nothing.
@Reducer
private struct ForgetfulSignUp {
  typealias State = SignUp.State
  enum Action: BindableAction {
    case binding(BindingAction<State>)
  }
  var body: some ReducerOf<Self> {
    Reduce { _, _ in .none }
  }
}

@MainActor
@Suite(.mainSerialExecutor) struct BindingTests {
  @Test func bindingReducerSetsTheFieldBeforeTheFeatureSeesIt() async {
    let store = TestStore(initialState: SignUp.State()) { SignUp() }
    await store.send(\.binding.acceptsTerms, true) { $0.acceptsTerms = true }
    await store.send(\.binding.name, "Blob") {
      $0.name = "Blob"
      $0.canSubmit = true
    }
    await store.send(.binding(.set(\.name, ""))) {
      $0.name = ""
      $0.canSubmit = false
    }
    await store.send(.set(\.name, "Blob Jr.")) {
      $0.name = "Blob Jr."
      $0.canSubmit = true
    }
  }

  @Test func bindingActionsCompareByFieldAndValue() {
    let action = BindingAction<SignUp.State>.set(\.name, "Blob")
    #expect(action == .set(\.name, "Blob"))
    #expect(action != .set(\.name, "Blob Jr."))
    #expect(action.keyPath == \SignUp.State.name)
    let sent = SignUp.Action.binding(action)
    let name = sent[case: \.binding.name]
    let acceptsTerms = sent[case: \.binding.acceptsTerms]
    #expect(name == "Blob")
    #expect(acceptsTerms == nil)
    #expect(sent.binding == action)
    #expect(SignUp.Action.submitTapped.binding == nil)
  }

  @Test func aBindingActionDumpsAsTheCallThatMadeIt() {
    var dump = ""
    customDump(BindingAction<SignUp.State>.set(\.name, "Blob"), to: &dump)
    // Swift on Linux names no property in a key path's description, so the value tells.
    #expect(dump.hasPrefix("BindingAction.set("))
    #expect(dump.contains("\"Blob\""))
  }

  @Test func aStoreSetsAFieldThroughItsBinding() {
    let store = Store(initialState: SignUp.State()) { SignUp() }
    store.acceptsTerms = true
    store.name = "Blob"
    #expect(store.name == "Blob")
    #expect(store.canSubmit)
  }

  @Test func aBindingWithoutBindingReducerIsReported() {
    let store = Store(initialState: SignUp.State()) { ForgetfulSignUp() }
    withKnownIssue {
      store.name = "Blob"
    } matching: { issue in
      issue.description.contains("BindingReducer()")
    }
    #expect(store.name == "")
  }
}
