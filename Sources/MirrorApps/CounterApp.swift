public import CaseStudies
public import Composable
public import SharedBroker

/// The counter program's root feature: the parent that holds the mirrored statistics and
/// passes its reference to the Counter child, as in TCA's parent/child sharing (the
/// `SharedCount` case study), only the value also lives in every other process through the
/// broker.
@Reducer
public struct CounterApp {
  /// The root state.
  @ObservableState
  public struct State: Equatable {
    /// The statistics, mirrored through the broker under the program's key.
    @Shared public var stats: Stats
    /// The counter child, holding the same reference.
    public var counter: CounterFeature.State
    /// The broker connection, for the status line.
    public var connection: BrokerClient.ConnectionState = .connecting

    /// Creates the state; the child receives the parent's `$stats`.
    ///
    /// - Parameter key: The broker key.
    public init(key: String) {
      _stats = Shared(wrappedValue: Stats(), .broker(key))
      counter = CounterFeature.State(stats: _stats.projectedValue)
    }
  }

  /// The root actions.
  public enum Action: Equatable, Sendable {
    /// A counter action.
    case counter(CounterFeature.Action)
    /// Start following the connection (and autoplay, when configured).
    case task
    /// The broker connection changed.
    case connectionChanged(BrokerClient.ConnectionState)
  }

  /// Taps + this often, when set (for unattended demos).
  public let autoplay: Duration?

  @Dependency(\.brokerClient) var client
  @Dependency(\.continuousClock) var clock

  /// Creates the reducer.
  ///
  /// - Parameter autoplay: Taps + this often, when set.
  public init(autoplay: Duration? = nil) {
    self.autoplay = autoplay
  }

  /// The counter child plus connection tracking and autoplay.
  public var body: some ReducerOf<Self> {
    Scope(state: \.counter, action: \.counter) { CounterFeature() }
    Reduce { state, action in
      switch action {
      case .counter:
        return .none
      case .task:
        let (client, clock, autoplay) = (client, clock, autoplay)
        return .merge(
          client.connectionEffect(Action.connectionChanged),
          autoplay.map { interval in
            .run { send in
              while true {
                try await clock.sleep(for: interval)
                await send(.counter(.incrementButtonTapped))
              }
            }
          } ?? .none
        )
      case let .connectionChanged(connection):
        state.connection = connection
        return .none
      }
    }
  }
}
