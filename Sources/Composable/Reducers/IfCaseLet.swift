public import CasePaths
internal import IssueReporting

extension Reducer {
  /// Runs a child reducer on one case of an enum state while the state is in that case, before
  /// this reducer.
  ///
  /// When the state leaves the case, the child's running effects are cancelled. A child action
  /// that arrives while the state is in another case is reported, as in TCA.
  ///
  /// ```swift
  /// Reduce { state, action in … }
  ///   .ifCaseLet(\.loggedIn, action: \.loggedIn) { LoggedIn() }
  /// ```
  ///
  /// - Parameters:
  ///   - toCaseState: A case key path to the child's state.
  ///   - toCaseAction: A case key path to the child's actions.
  ///   - child: The child reducer.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs both.
  @inlinable
  public func ifCaseLet<CaseState, CaseAction, Child: Reducer>(
    _ toCaseState: CaseKeyPath<State, CaseState>,
    action toCaseAction: CaseKeyPath<Action, CaseAction>,
    @ReducerBuilder<CaseState, CaseAction> then child: () -> Child,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> IfCaseLetReducer<Self, Child>
  where
    CaseState == Child.State, CaseAction == Child.Action, State: CasePathable,
    Action: CasePathable
  {
    IfCaseLetReducer(
      parent: self,
      child: child(),
      toChildState: CasePathCache.casePath(toCaseState),
      toChildAction: CasePathCache.casePath(toCaseAction),
      effectsID: ChildEffectsID(path: toCaseState),
      location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
  }
}

/// The reducer built by ``Reducer/ifCaseLet(_:action:then:fileID:filePath:line:column:)``.
public struct IfCaseLetReducer<Parent: Reducer, Child: Reducer>: Reducer {
  @usableFromInline let parent: Parent
  @usableFromInline let child: Child
  @usableFromInline let toChildState: AnyCasePath<Parent.State, Child.State>
  @usableFromInline let toChildAction: AnyCasePath<Parent.Action, Child.Action>
  @usableFromInline let effectsID: ChildEffectsID
  @usableFromInline let location: SourceLocation

  @usableFromInline
  init(
    parent: Parent,
    child: Child,
    toChildState: AnyCasePath<Parent.State, Child.State>,
    toChildAction: AnyCasePath<Parent.Action, Child.Action>,
    effectsID: ChildEffectsID,
    location: SourceLocation
  ) {
    self.parent = parent
    self.child = child
    self.toChildState = toChildState
    self.toChildAction = toChildAction
    self.effectsID = effectsID
    self.location = location
  }

  /// Runs the child (when the state is in its case) and then the parent.
  public func reduce(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    let childEffect = reduceChild(into: &state, action: action)
    let wasInCase = toChildState.extract(from: state) != nil
    let parentEffect = parent.reduce(into: &state, action: action)
    let leftCase = wasInCase && toChildState.extract(from: state) == nil
    return .merge(
      childEffect,
      parentEffect,
      leftCase ? .cancel(id: effectsID) : .none
    )
  }

  private func reduceChild(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    guard let childAction = toChildAction.extract(from: action) else { return .none }
    guard var childState = toChildState.extract(from: state) else {
      reportIssue(
        """
        An "ifCaseLet" received a child action when child state was set to a different case: \
        \(action)

        The parent probably changed the case while one of the child's effects was still \
        running, or changed it before this reducer ran: "ifCaseLet" must run before any \
        reducer that sets the state to another case.
        """,
        fileID: location.fileID, filePath: location.filePath,
        line: location.line, column: location.column
      )
      return .none
    }
    let effect = child.reduce(into: &childState, action: childAction)
    state = toChildState.embed(childState)
    guard !effect.operation.isNone else { return .none }
    let embed = UncheckedEmbed(toChildAction)
    return
      effect
      .map { embed.casePath.embed($0) }
      .cancellable(id: effectsID)
  }
}
