/// Groups reducers so that a modifier (``Reducer/ifLet(_:action:then:fileID:filePath:line:column:)``,
/// ``Reducer/forEach(_:action:element:fileID:filePath:line:column:)``) applies to all of them.
///
/// The reducers run in order on the same state, like the old `Reducer.combine`.
///
/// ```swift
/// CombineReducers {
///   Scope(state: \.counter, action: \.counter) { Counter() }
///   Reduce { state, action in .none }
/// }
/// ```
public struct CombineReducers<State, Action, Reducers: Reducer>: Reducer
where Reducers.State == State, Reducers.Action == Action {
  @usableFromInline let reducers: Reducers

  /// Combines the reducers listed in the builder.
  ///
  /// - Parameter build: The reducers.
  @inlinable
  public init(@ReducerBuilder<State, Action> _ build: () -> Reducers) {
    reducers = build()
  }

  /// Runs every reducer in order and merges their effects.
  @inlinable
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    reducers.reduce(into: &state, action: action)
  }
}
