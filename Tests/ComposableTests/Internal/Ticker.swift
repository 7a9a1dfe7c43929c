import Composable

/// A screen whose `task` ticks every second until its effects are cancelled: the child whose
/// timer must end with it when it is popped or its case is left.
@Reducer
struct Ticker {
  @ObservableState
  struct State: Equatable { var ticks = 0 }
  enum Action { case task, tick }
  @Dependency(\.continuousClock) var clock
  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .task:
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
