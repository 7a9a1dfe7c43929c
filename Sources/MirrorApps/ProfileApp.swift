public import CaseStudies
public import Composable
public import SharedBroker

/// The profile program's root feature: it declares the mirrored statistics by key, app-wide,
/// without anybody passing them (TCA's `@Shared(.inMemory("count"))`, across processes).
@Reducer
public struct ProfileApp {
  /// The root state.
  @ObservableState
  public struct State: Equatable {
    /// The profile child, holding the statistics shared under the program's key.
    public var profile: ProfileFeature.State
    /// The broker connection, for the status line.
    public var connection: BrokerClient.ConnectionState = .connecting

    /// Creates the state.
    ///
    /// - Parameter key: The broker key.
    public init(key: String) {
      profile = ProfileFeature.State(stats: Shared(wrappedValue: Stats(), .broker(key)))
    }
  }

  /// The root actions.
  public enum Action: Equatable, Sendable {
    /// A profile action.
    case profile(ProfileFeature.Action)
    /// Start following the connection.
    case task
    /// The broker connection changed.
    case connectionChanged(BrokerClient.ConnectionState)
  }

  @Dependency(\.brokerClient) var client

  /// Creates the reducer.
  public init() {}

  /// The profile child plus connection tracking.
  public var body: some ReducerOf<Self> {
    Scope(state: \.profile, action: \.profile) { ProfileFeature() }
    Reduce { state, action in
      switch action {
      case .profile:
        return .none
      case .task:
        return client.connectionEffect(Action.connectionChanged)
      case let .connectionChanged(connection):
        state.connection = connection
        return .none
      }
    }
  }
}
