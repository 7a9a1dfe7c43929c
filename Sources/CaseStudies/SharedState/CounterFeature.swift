public import Composable

/// The Counter tab of the SharedState case study: + and − change the shared count and its
/// statistics; "Is this prime?" shows an alert.
@Reducer
public struct CounterFeature {
  /// The counter's state; `stats` is shared with the profile.
  @ObservableState
  public struct State: Equatable {
    /// The prime-check alert, while shown.
    @Presents public var alert: AlertState<Action.Alert>?
    /// The shared statistics.
    @Shared public var stats: Stats

    /// Creates the state around a shared reference passed by the parent.
    ///
    /// - Parameters:
    ///   - stats: The parent's shared statistics (`$stats`).
    ///   - alert: An alert to show.
    public init(stats: Shared<Stats>, alert: AlertState<Action.Alert>? = nil) {
      self._stats = stats
      self.alert = alert
    }
  }

  /// What the user does on the counter tab.
  public enum Action: Equatable, Sendable {
    /// The alert: dismissed (it has no other buttons).
    case alert(PresentationAction<Alert>)
    /// − was tapped.
    case decrementButtonTapped
    /// + was tapped.
    case incrementButtonTapped
    /// "Is this prime?" was tapped.
    case isPrimeButtonTapped

    /// The prime-check alert's buttons: only OK, which dismisses it.
    public enum Alert: Equatable, Sendable {}
  }

  /// Creates the reducer.
  public init() {}

  /// Applies a counter action; the alert is presented with `ifLet`.
  public var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .alert:
        break
      case .decrementButtonTapped:
        state.$stats.withLock { $0.decrement() }
      case .incrementButtonTapped:
        state.$stats.withLock { $0.increment() }
      case .isPrimeButtonTapped:
        let count = state.stats.count
        state.alert = AlertState(
          title: isPrime(count)
            ? "👍 The number \(count) is prime!"
            : "👎 The number \(count) is not prime :("
        )
      }
      return .none
    }
    .ifLet(\.$alert, action: \.alert)
  }
}
