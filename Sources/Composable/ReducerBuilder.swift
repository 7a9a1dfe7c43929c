/// The result builder behind ``Reducer/body``: lists reducers that run one after the other on
/// the same state, with `if`, `if let`, `switch` and `#available` support.
@resultBuilder
public enum ReducerBuilder<State, Action> {
  /// Accepts any reducer of the builder's state and action.
  @inlinable
  public static func buildExpression<R: Reducer>(_ reducer: R) -> R
  where R.State == State, R.Action == Action {
    reducer
  }

  /// An empty body does nothing.
  @inlinable
  public static func buildBlock() -> EmptyReducer<State, Action> {
    EmptyReducer()
  }

  /// Starts a sequence of reducers.
  @inlinable
  public static func buildPartialBlock<R: Reducer>(first: R) -> R
  where R.State == State, R.Action == Action {
    first
  }

  /// Appends a reducer to the sequence; it runs after the ones before it.
  @inlinable
  public static func buildPartialBlock<R0: Reducer, R1: Reducer>(
    accumulated: R0, next: R1
  ) -> ReducerSequence<R0, R1>
  where R0.State == State, R0.Action == Action, R1.State == State, R1.Action == Action {
    ReducerSequence(accumulated, next)
  }

  /// An `if` without `else`: the reducer runs only when the condition held while building.
  @inlinable
  public static func buildOptional<R: Reducer>(_ wrapped: R?) -> OptionalReducer<R>
  where R.State == State, R.Action == Action {
    OptionalReducer(wrapped: wrapped)
  }

  /// The first branch of an `if`/`else` or `switch`.
  @inlinable
  public static func buildEither<First: Reducer, Second: Reducer>(
    first reducer: First
  ) -> ConditionalReducer<First, Second>
  where First.State == State, First.Action == Action {
    .first(reducer)
  }

  /// The second branch of an `if`/`else` or `switch`.
  @inlinable
  public static func buildEither<First: Reducer, Second: Reducer>(
    second reducer: Second
  ) -> ConditionalReducer<First, Second>
  where Second.State == State, Second.Action == Action {
    .second(reducer)
  }

  /// `if #available` support.
  @inlinable
  public static func buildLimitedAvailability<R: Reducer>(_ wrapped: R) -> R
  where R.State == State, R.Action == Action {
    wrapped
  }
}

/// Two reducers run in order on the same state; their effects are merged.
public struct ReducerSequence<R0: Reducer, R1: Reducer>: Reducer
where R0.State == R1.State, R0.Action == R1.Action {
  @usableFromInline let r0: R0
  @usableFromInline let r1: R1

  /// Creates the sequence `r0` then `r1`.
  @inlinable
  public init(_ r0: R0, _ r1: R1) {
    self.r0 = r0
    self.r1 = r1
  }

  /// Runs both reducers and merges their effects.
  @inlinable
  public func reduce(into state: inout R0.State, action: R0.Action) -> Effect<R0.Action> {
    let first = r0.reduce(into: &state, action: action)
    let second = r1.reduce(into: &state, action: action)
    if first.operation.isNone { return second }
    if second.operation.isNone { return first }
    return .merge(first, second)
  }
}

/// A reducer that may be absent (an `if` in a ``ReducerBuilder``).
public struct OptionalReducer<Wrapped: Reducer>: Reducer {
  @usableFromInline let wrapped: Wrapped?

  /// Wraps a reducer that may be absent.
  @inlinable
  public init(wrapped: Wrapped?) {
    self.wrapped = wrapped
  }

  /// Runs the wrapped reducer if there is one.
  @inlinable
  public func reduce(
    into state: inout Wrapped.State, action: Wrapped.Action
  ) -> Effect<Wrapped.Action> {
    wrapped?.reduce(into: &state, action: action) ?? .none
  }
}

/// One of two reducers (an `if`/`else` or `switch` in a ``ReducerBuilder``).
public enum ConditionalReducer<First: Reducer, Second: Reducer>: Reducer
where First.State == Second.State, First.Action == Second.Action {
  /// The first branch.
  case first(First)
  /// The second branch.
  case second(Second)

  /// Runs the chosen branch.
  @inlinable
  public func reduce(into state: inout First.State, action: First.Action) -> Effect<First.Action> {
    switch self {
    case let .first(reducer): reducer.reduce(into: &state, action: action)
    case let .second(reducer): reducer.reduce(into: &state, action: action)
    }
  }
}
