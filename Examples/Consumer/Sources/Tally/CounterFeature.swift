import Composable
import SharedBroker

/// The statistics the library guide's counter keeps, read and written by generated code.
@JSONCodable
public struct Stats: Codable, Equatable, Sendable {
  /// The count.
  public var count = 0

  /// Zero.
  public init() {}
}

/// The library guide's counter ("Writing a feature"), as written there: `@Reducer`, `@ObservableState`, `@Shared` and an
/// alert presented with `@Presents`.
@Reducer
public struct CounterFeature {
  /// The counter's state.
  @ObservableState
  public struct State: Equatable {
    /// The statistics, shared with the parent.
    @Shared public var stats: Stats
    /// The prime alert, while shown.
    @Presents public var alert: AlertState<Action.Alert>?

    /// A counter on the parent's statistics.
    public init(stats: Shared<Stats>) {
      _stats = stats
    }
  }

  /// What the user can do.
  public enum Action {
    /// Adds one.
    case incrementButtonTapped
    /// Asks whether the count is prime.
    case isPrimeButtonTapped
    /// The alert.
    case alert(PresentationAction<Alert>)
    /// The alert's buttons: OK only.
    public enum Alert: Equatable {}
  }

  /// The feature.
  public init() {}

  /// Counts, and answers with an alert.
  public var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .incrementButtonTapped:
        state.$stats.withLock { $0.count += 1 }
        return .none
      case .isPrimeButtonTapped:
        state.alert = AlertState(title: isPrime(state.stats.count) ? "Prime!" : "Not prime")
        return .none
      case .alert:
        return .none
      }
    }
    .ifLet(\.$alert, action: \.alert)
  }
}

private func isPrime(_ number: Int) -> Bool {
  number > 1 && !(2..<number).contains { number.isMultiple(of: $0) }
}

/// The README's parent: mirrored statistics, a counter child holding the same reference, and
/// a destination enum presented with `.ifLet`.
@Reducer
public struct AppFeature {
  /// The parent state.
  @ObservableState
  public struct State: Equatable {
    /// Mirrored in every process.
    @Shared(.broker("stats")) public var stats = Stats()
    /// The counter, on `$stats`.
    public var counter: CounterFeature.State
    /// The presented destination.
    @Presents public var destination: Destination.State?

    /// A parent whose counter shares its statistics.
    public init() {
      counter = CounterFeature.State(stats: _stats)
    }
  }

  /// The parent's actions.
  public enum Action {
    /// A counter action.
    case counter(CounterFeature.Action)
    /// Opens another counter on the same statistics.
    case openSecondCounter
    /// The destination.
    case destination(PresentationAction<Destination.Action>)
  }

  /// What the parent presents.
  @Reducer
  public enum Destination {
    /// A second counter on the same statistics.
    case secondCounter(CounterFeature)
  }

  /// The feature.
  public init() {}

  /// The counter child, and the destination.
  public var body: some ReducerOf<Self> {
    Scope(state: \.counter, action: \.counter) { CounterFeature() }
    Reduce { state, action in
      switch action {
      case .openSecondCounter:
        state.destination = .secondCounter(CounterFeature.State(stats: state.$stats))
        return .none
      case .counter, .destination:
        return .none
      }
    }
    .ifLet(\.$destination, action: \.destination)
  }
}

extension AppFeature.Destination.State: Equatable {}
