extension Reducer {
  /// Runs `reducer` after this reducer whenever the value `toValue` reads from the state
  /// changed (by `==`), with the values before and after.
  ///
  /// ```swift
  /// BindingReducer()
  ///   .onChange(of: \.userSettings.isHapticFeedbackEnabled) { oldValue, newValue in
  ///     Reduce { state, action in
  ///       .run { send in await send(.haptics(newValue)) }
  ///     }
  ///   }
  /// ```
  ///
  /// - Parameters:
  ///   - toValue: Reads the watched value from the state.
  ///   - reducer: Builds the reducer to run from the old and new values.
  /// - Returns: A reducer that runs this one, then `reducer` on a change.
  @inlinable
  public func onChange<Value: Equatable, Changed: Reducer<State, Action>>(
    of toValue: @escaping (State) -> Value,
    @ReducerBuilder<State, Action> _ reducer:
      @escaping (
        _ oldValue: Value, _ newValue: Value
      ) -> Changed
  ) -> OnChangeReducer<Self, Value, Changed> {
    onChange(of: toValue, removeDuplicates: ==, reducer)
  }

  /// Runs `reducer` after this reducer whenever the value `toValue` reads from the state
  /// changed, as `isDuplicate` tells, with the values before and after.
  ///
  /// - Parameters:
  ///   - toValue: Reads the watched value from the state.
  ///   - isDuplicate: Whether two values count as the same.
  ///   - reducer: Builds the reducer to run from the old and new values.
  /// - Returns: A reducer that runs this one, then `reducer` on a change.
  @inlinable
  public func onChange<Value, Changed: Reducer<State, Action>>(
    of toValue: @escaping (State) -> Value,
    removeDuplicates isDuplicate: @escaping (Value, Value) -> Bool,
    @ReducerBuilder<State, Action> _ reducer:
      @escaping (
        _ oldValue: Value, _ newValue: Value
      ) -> Changed
  ) -> OnChangeReducer<Self, Value, Changed> {
    OnChangeReducer(base: self, toValue: toValue, isDuplicate: isDuplicate, reducer: reducer)
  }
}

/// The reducer built by ``Reducer/onChange(of:_:)``.
public struct OnChangeReducer<Base: Reducer, Value, Changed: Reducer<Base.State, Base.Action>>:
  Reducer
{
  @usableFromInline let base: Base
  @usableFromInline let toValue: (Base.State) -> Value
  @usableFromInline let isDuplicate: (Value, Value) -> Bool
  @usableFromInline let reducer: (Value, Value) -> Changed

  @usableFromInline
  init(
    base: Base,
    toValue: @escaping (Base.State) -> Value,
    isDuplicate: @escaping (Value, Value) -> Bool,
    reducer: @escaping (Value, Value) -> Changed
  ) {
    self.base = base
    self.toValue = toValue
    self.isDuplicate = isDuplicate
    self.reducer = reducer
  }

  /// Runs the base reducer, then the change's reducer when the value changed.
  @inlinable
  public func reduce(into state: inout Base.State, action: Base.Action) -> Effect<Base.Action> {
    let oldValue = toValue(state)
    let baseEffects = base.reduce(into: &state, action: action)
    let newValue = toValue(state)
    guard !isDuplicate(oldValue, newValue) else { return baseEffects }
    return .merge(baseEffects, reducer(oldValue, newValue).reduce(into: &state, action: action))
  }
}
