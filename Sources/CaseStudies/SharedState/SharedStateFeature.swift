public import Composable

/// The SharedState case study: a tab switch between Counter and Profile, each child
/// holding the same shared statistics, combined under one parent.
///
/// The original example kept one copy of the numbers and derived the profile through a
/// computed property with a write-back setter; with `@Shared` the parent passes one reference
/// to both children instead, and each child still touches only its own state.
@Reducer
public struct SharedStateFeature {
  /// The visible tab.
  public enum Tab: String, CaseIterable, Equatable, Sendable {
    /// The counter.
    case counter
    /// The profile.
    case profile
  }

  /// The parent state.
  @ObservableState
  public struct State: Equatable {
    /// The visible tab.
    public var currentTab: Tab
    /// The counter child.
    public var counter: CounterFeature.State
    /// The profile child.
    public var profile: ProfileFeature.State

    /// Creates the state; both children receive the same shared statistics.
    ///
    /// - Parameters:
    ///   - stats: The shared statistics (a fresh value by default).
    ///   - currentTab: The visible tab.
    public init(stats: Shared<Stats> = Shared(value: Stats()), currentTab: Tab = .counter) {
      self.currentTab = currentTab
      self.counter = CounterFeature.State(stats: stats)
      self.profile = ProfileFeature.State(stats: stats)
    }
  }

  /// The parent's actions.
  public enum Action: Equatable, Sendable {
    /// A counter action.
    case counter(CounterFeature.Action)
    /// A profile action.
    case profile(ProfileFeature.Action)
    /// A tab was selected.
    case selectTab(Tab)
  }

  /// Creates the reducer.
  public init() {}

  /// The children, scoped, plus tab switching.
  public var body: some ReducerOf<Self> {
    Scope(state: \.counter, action: \.counter) { CounterFeature() }
    Scope(state: \.profile, action: \.profile) { ProfileFeature() }
    Reduce { state, action in
      switch action {
      case .counter, .profile:
        return .none
      case let .selectTab(tab):
        state.currentTab = tab
        return .none
      }
    }
  }
}
