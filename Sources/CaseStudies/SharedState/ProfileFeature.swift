public import Composable

/// The Profile tab of the SharedState case study: shows the shared statistics; Reset zeroes
/// them, and the counter sees it at once.
@Reducer
public struct ProfileFeature {
  /// The profile's state; `stats` is shared with the counter.
  @ObservableState
  public struct State: Equatable {
    /// The shared statistics.
    @Shared public var stats: Stats

    /// Creates the state around a shared reference passed by the parent.
    ///
    /// - Parameter stats: The parent's shared statistics (`$stats`).
    public init(stats: Shared<Stats>) {
      self._stats = stats
    }
  }

  /// What the user does on the profile tab.
  public enum Action: Equatable, Sendable {
    /// Reset was tapped.
    case resetCounterButtonTapped
  }

  /// Creates the reducer.
  public init() {}

  /// Applies a profile action.
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    switch action {
    case .resetCounterButtonTapped:
      state.$stats.withLock { $0.reset() }
      return .none
    }
  }
}
