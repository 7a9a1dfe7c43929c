import Composable
import SharedBroker

/// A tally that every process using the key `tally` shares through the broker.
@Reducer
public struct Tally {
  /// The tally's state.
  @ObservableState
  public struct State: Equatable {
    /// The count, mirrored through the broker.
    @Shared(.broker("tally")) public var count = 0

    /// A state with whatever count the broker holds.
    public init() {}
  }

  /// What the user can do.
  public enum Action: Equatable {
    /// Adds one.
    case incrementButtonTapped
    /// Back to zero, in every process.
    case resetButtonTapped
  }

  /// The feature.
  public init() {}

  /// Changes the shared count.
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    switch action {
    case .incrementButtonTapped:
      state.$count.withLock { $0 += 1 }
      return .none
    case .resetButtonTapped:
      state.$count.withLock { $0 = 0 }
      return .none
    }
  }
}
