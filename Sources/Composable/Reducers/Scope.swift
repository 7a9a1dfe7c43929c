public import CasePaths

/// Embeds a child reducer in a parent: it runs the child on a piece of the parent's state for
/// the parent's actions that carry a child action.
///
/// ```swift
/// var body: some ReducerOf<Self> {
///   Scope(state: \.counter, action: \.counter) { Counter() }
///   Reduce { state, action in ... }
/// }
/// ```
///
/// The child's effects are mapped back into parent actions. Actions of other cases pass through
/// untouched, so a `Scope` costs one case check for them.
public struct Scope<ParentState, ParentAction, Child: Reducer>: Reducer {
  @usableFromInline enum StatePath {
    case keyPath(WritableKeyPath<ParentState, Child.State>)
    case casePath(AnyCasePath<ParentState, Child.State>)
  }

  @usableFromInline let toChildState: StatePath
  @usableFromInline let toChildAction: AnyCasePath<ParentAction, Child.Action>
  @usableFromInline let child: Child

  /// Scopes to a stored (or computed, writable) property of the parent's state.
  ///
  /// - Parameters:
  ///   - toChildState: A writable key path to the child's state.
  ///   - toChildAction: A case key path to the child's actions.
  ///   - child: The child reducer.
  @inlinable
  public init<ChildState, ChildAction>(
    state toChildState: WritableKeyPath<ParentState, ChildState>,
    action toChildAction: CaseKeyPath<ParentAction, ChildAction>,
    @ReducerBuilder<ChildState, ChildAction> child: () -> Child
  ) where ChildState == Child.State, ChildAction == Child.Action {
    self.toChildState = .keyPath(toChildState)
    self.toChildAction = CasePathCache.casePath(toChildAction)
    self.child = child()
  }

  /// Scopes to one case of an enum state; the child runs only while the state is in that case.
  ///
  /// - Parameters:
  ///   - toChildState: A case key path to the child's state.
  ///   - toChildAction: A case key path to the child's actions.
  ///   - child: The child reducer.
  @inlinable
  public init<ChildState, ChildAction>(
    state toChildState: CaseKeyPath<ParentState, ChildState>,
    action toChildAction: CaseKeyPath<ParentAction, ChildAction>,
    @ReducerBuilder<ChildState, ChildAction> child: () -> Child
  ) where ChildState == Child.State, ChildAction == Child.Action {
    self.toChildState = .casePath(CasePathCache.casePath(toChildState))
    self.toChildAction = CasePathCache.casePath(toChildAction)
    self.child = child()
  }

  /// Runs the child for child actions; ignores every other action.
  @inlinable
  public func reduce(into state: inout ParentState, action: ParentAction) -> Effect<ParentAction> {
    guard let childAction = toChildAction.extract(from: action) else { return .none }
    let effect: Effect<Child.Action>
    switch toChildState {
    case let .keyPath(keyPath):
      effect = child.reduce(into: &state[keyPath: keyPath], action: childAction)
    case let .casePath(casePath):
      guard var childState = casePath.extract(from: state) else { return .none }
      effect = child.reduce(into: &childState, action: childAction)
      state = casePath.embed(childState)
    }
    guard !effect.operation.isNone else { return .none }
    let embed = UncheckedEmbed(toChildAction)
    return effect.map { embed.casePath.embed($0) }
  }
}

/// Carries a case path into `@Sendable` effect transforms; case paths are immutable values.
@usableFromInline
struct UncheckedEmbed<Root, Value>: @unchecked Sendable {
  @usableFromInline let casePath: AnyCasePath<Root, Value>
  @usableFromInline init(_ casePath: AnyCasePath<Root, Value>) { self.casePath = casePath }
}
