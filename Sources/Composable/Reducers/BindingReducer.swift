public import CasePaths

/// Applies the ``BindingAction``s of a ``BindableAction`` to the state, and does nothing for
/// any other action.
///
/// Put it before the reducer that reacts to a field changing, so that it sees the new value:
///
/// ```swift
/// var body: some ReducerOf<Self> {
///   BindingReducer()
///   Reduce { state, action in
///     switch action {
///     case .binding(\.name):
///       state.isSaveEnabled = !state.name.isEmpty
///       return .none
///     case .binding:
///       return .none
///     }
///   }
/// }
/// ```
public struct BindingReducer<State, Action, ViewAction: BindableAction>: Reducer
where State == ViewAction.State {
  @usableFromInline let toViewAction: (Action) -> ViewAction?

  /// Applies the binding actions of the feature's own ``BindableAction``.
  @inlinable
  public init() where Action == ViewAction {
    toViewAction = { $0 }
  }

  /// Applies the binding actions of the ``BindableAction`` embedded in the feature's actions,
  /// such as its view actions: `BindingReducer(action: \.view)`.
  ///
  /// - Parameter toViewAction: A case key path to the bindable actions.
  @inlinable
  public init(action toViewAction: CaseKeyPath<Action, ViewAction>) where Action: CasePathable {
    let casePath = CasePathCache.casePath(toViewAction)
    self.toViewAction = { casePath.extract(from: $0) }
  }

  /// Sets the field a binding action names; other actions pass.
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    toViewAction(action)?.binding?.set(&state)
    return .none
  }
}
