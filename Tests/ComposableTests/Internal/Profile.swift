import Composable

/// A feature whose state has every kind of property observation treats differently: tracked
/// values, a nested observable child, a `@Shared` value and an ignored one.
@Reducer
struct Profile {
  @ObservableState
  struct State: Equatable {
    var name = ""
    var visits = 0
    var badge = Badge.State()
    @Shared var total: Int
    @ObservationStateIgnored var scratch = 0

    init(total: Shared<Int> = Shared(0)) {
      _total = total
    }
  }

  enum Action {
    case rename(String)
    case visit
    case badge(Badge.Action)
    case newBadge
    case scribble
  }

  var body: some ReducerOf<Self> {
    Scope(state: \.badge, action: \.badge) { Badge() }
    Reduce { state, action in
      switch action {
      case .rename(let name):
        state.name = name
      case .visit:
        state.visits += 1
      case .badge:
        break
      case .newBadge:
        state.badge = Badge.State()
      case .scribble:
        state.scratch += 1
      }
      return .none
    }
  }
}

/// The child of ``Profile``.
@Reducer
struct Badge {
  @ObservableState
  struct State: Equatable {
    var taps = 0
    var label = ""
  }

  enum Action {
    case tap
    case relabel(String)
  }

  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .tap: state.taps += 1
      case .relabel(let label): state.label = label
      }
      return .none
    }
  }
}
