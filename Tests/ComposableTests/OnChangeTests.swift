import Composable
import TestSupport
import Testing

/// A settings form that logs every change of its volume, old and new.
@Reducer
private struct Volume {
  @ObservableState
  struct State: Equatable {
    var volume = 5
    var isMuted = false
    var log: [String] = []
  }
  enum Action: BindableAction {
    case binding(BindingAction<State>)
  }
  var body: some ReducerOf<Self> {
    BindingReducer()
      .onChange(of: \.volume) { oldValue, newValue in
        Reduce { state, _ in
          state.log.append("\(oldValue) → \(newValue)")
          return .none
        }
      }
  }
}

@MainActor
@Suite(.mainSerialExecutor) struct OnChangeTests {
  @Test func theReducerRunsOnlyWhenTheValueChanged() async {
    let store = TestStore(initialState: Volume.State()) { Volume() }
    await store.send(\.binding.volume, 7) {
      $0.volume = 7
      $0.log = ["5 → 7"]
    }
    await store.send(\.binding.isMuted, true) { $0.isMuted = true }
    await store.send(\.binding.volume, 7)
  }
}
