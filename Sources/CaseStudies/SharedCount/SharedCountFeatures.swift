public import Composable

/// Parent/child sharing with `@Shared`: the parent owns `count` and passes `$count` to the
/// child, which holds a reference rather than a copy, so both see every change.
@Reducer
public struct ParentFeature {
  /// The parent's state.
  @ObservableState
  public struct State: Equatable {
    /// The shared count.
    @Shared public var count: Int
    /// The child, holding the same reference.
    public var child: ChildFeature.State

    /// Creates the state; the child receives the parent's reference.
    ///
    /// - Parameter count: The initial count.
    public init(count: Int = 0) {
      self._count = Shared(value: count)
      self.child = ChildFeature.State(count: _count.projectedValue)
    }
  }

  /// The parent's actions.
  public enum Action: Equatable, Sendable {
    /// A child action.
    case child(ChildFeature.Action)
    /// The parent increments.
    case incrementButtonTapped
  }

  /// Creates the reducer.
  public init() {}

  /// The child, scoped, plus the parent's own increment.
  public var body: some ReducerOf<Self> {
    Scope(state: \.child, action: \.child) { ChildFeature() }
    Reduce { state, action in
      switch action {
      case .child:
        return .none
      case .incrementButtonTapped:
        state.$count.withLock { $0 += 1 }
        return .none
      }
    }
  }
}

/// The child of ``ParentFeature``, showing the three ways to initialize a `@Shared` property:
/// from a parent's reference, from a plain value, and from a persisted key with a default.
@Reducer
public struct ChildFeature {
  /// The child's state.
  @ObservableState
  public struct State: Equatable {
    /// The shared count.
    @Shared public var count: Int

    /// From a parent's reference: `self._count = count`.
    ///
    /// - Parameter count: The parent's `$count`.
    public init(count: Shared<Int>) {
      self._count = count
    }

    /// From a plain value: the child owns a new reference.
    ///
    /// - Parameter count: The initial value.
    public init(count: Int) {
      self._count = Shared(value: count)
    }

    /// Persisted in app storage; the argument is only a default, a stored value wins.
    ///
    /// - Parameter count: The default, evaluated only when nothing is stored.
    public init(persistedCount count: @autoclosure () -> Int) {
      self._count = Shared(wrappedValue: count(), .appStorage("count"))
    }
  }

  /// The child's actions.
  public enum Action: Equatable, Sendable {
    /// The child decrements.
    case decrementButtonTapped
  }

  /// Creates the reducer.
  public init() {}

  /// Applies a child action.
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    switch action {
    case .decrementButtonTapped:
      state.$count.withLock { $0 -= 1 }
      return .none
    }
  }
}

/// App-wide sharing and observation: the count is declared by key (`.inMemory("count")`)
/// instead of being passed down, and a publisher effect turns its changes into actions.
@Reducer
public struct AppWideCountFeature {
  /// The state.
  @ObservableState
  public struct State: Equatable {
    /// The count shared app-wide under "count".
    @Shared(.inMemory("count")) public var count = 0
    /// The last value the publisher reported.
    public var observedCount: Int?

    /// Creates the state.
    public init() {}
  }

  /// The actions.
  public enum Action: Equatable, Sendable {
    /// Starts observing the count.
    case task
    /// The count changed.
    case countUpdated(Int)
    /// Increment.
    case incrementButtonTapped
  }

  /// Whether `countUpdated` writes the count back: the feedback loop that writing a shared
  /// value from its own publisher makes, which the original example warns against.
  public let writesBackOnUpdate: Bool

  /// Creates the reducer.
  ///
  /// - Parameter writesBackOnUpdate: Reproduces the original example's feedback loop when
  ///   `true`.
  public init(writesBackOnUpdate: Bool = false) {
    self.writesBackOnUpdate = writesBackOnUpdate
  }

  private enum CancelID: Hashable, Sendable { case observation }

  /// Applies an action.
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    switch action {
    case .task:
      return .publisher { state.$count.publisher.map(Action.countUpdated) }
        .cancellable(id: CancelID.observation, cancelInFlight: true)
    case let .countUpdated(count):
      state.observedCount = count
      if writesBackOnUpdate { state.$count.withLock { $0 = count + 1 } }
      return .none
    case .incrementButtonTapped:
      state.$count.withLock { $0 += 1 }
      return .none
    }
  }
}
