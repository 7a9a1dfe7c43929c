public import CasePaths
internal import IssueReporting

extension Reducer {
  /// Runs a child reducer on optional child state while it is non-`nil`, before this reducer.
  ///
  /// When the child state becomes `nil` (the parent dismissed it), the child's running effects
  /// are cancelled, so a dismissed feature can never send again.
  ///
  /// ```swift
  /// Reduce { state, action in ... }
  ///   .ifLet(\.detail, action: \.detail) { Detail() }
  /// ```
  ///
  /// - Parameters:
  ///   - toChildState: A key path to the optional child state.
  ///   - toChildAction: A case key path to the child's actions.
  ///   - child: The child reducer.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs both.
  @inlinable
  public func ifLet<ChildState, ChildAction, Child: Reducer>(
    _ toChildState: WritableKeyPath<State, ChildState?>,
    action toChildAction: CaseKeyPath<Action, ChildAction>,
    @ReducerBuilder<ChildState, ChildAction> then child: () -> Child,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> IfLetReducer<Self, Child>
  where ChildState == Child.State, ChildAction == Child.Action, Action: CasePathable {
    IfLetReducer(
      parent: self,
      child: child(),
      toChildState: toChildState,
      toChildAction: CasePathCache.casePath(toChildAction),
      location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
  }
}

/// The reducer built by ``Reducer/ifLet(_:action:then:fileID:filePath:line:column:)``.
public struct IfLetReducer<Parent: Reducer, Child: Reducer>: Reducer {
  @usableFromInline let parent: Parent
  @usableFromInline let child: Child
  @usableFromInline let toChildState: WritableKeyPath<Parent.State, Child.State?>
  @usableFromInline let toChildAction: AnyCasePath<Parent.Action, Child.Action>
  @usableFromInline let location: SourceLocation

  @usableFromInline
  init(
    parent: Parent,
    child: Child,
    toChildState: WritableKeyPath<Parent.State, Child.State?>,
    toChildAction: AnyCasePath<Parent.Action, Child.Action>,
    location: SourceLocation
  ) {
    self.parent = parent
    self.child = child
    self.toChildState = toChildState
    self.toChildAction = toChildAction
    self.location = location
  }

  /// Runs the child (when its state exists) and then the parent.
  public func reduce(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    let childEffect = reduceChild(into: &state, action: action)
    let hadChild = state[keyPath: toChildState] != nil
    let parentEffect = parent.reduce(into: &state, action: action)
    let dismissed = hadChild && state[keyPath: toChildState] == nil
    return .merge(
      childEffect,
      parentEffect,
      dismissed ? .cancel(id: ChildEffectsID(path: toChildState)) : .none
    )
  }

  private func reduceChild(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    guard let childAction = toChildAction.extract(from: action) else { return .none }
    guard var childState = state[keyPath: toChildState] else {
      reportIssue(
        """
        An "ifLet" received a child action when child state was "nil": \(action)

        The child feature was probably dismissed while one of its effects was still running. \
        Cancel child effects when dismissing, or don't send child actions without child state.
        """,
        fileID: location.fileID, filePath: location.filePath,
        line: location.line, column: location.column
      )
      return .none
    }
    let effect = child.reduce(into: &childState, action: childAction)
    state[keyPath: toChildState] = childState
    let embed = UncheckedEmbed(toChildAction)
    return effect
      .map { embed.casePath.embed($0) }
      .cancellable(id: ChildEffectsID(path: toChildState))
  }
}

/// Identifies every effect of one optional child (or enum case) so that its dismissal can
/// cancel them together.
@usableFromInline
struct ChildEffectsID: Hashable, @unchecked Sendable {
  let path: AnyKeyPath

  @usableFromInline
  init(path: AnyKeyPath) {
    self.path = path
  }
}

/// Where a reducer was built, for issues reported at run time.
public struct SourceLocation: Sendable {
  @usableFromInline let fileID: StaticString
  @usableFromInline let filePath: StaticString
  @usableFromInline let line: UInt
  @usableFromInline let column: UInt

  @usableFromInline
  init(fileID: StaticString, filePath: StaticString, line: UInt, column: UInt) {
    self.fileID = fileID
    self.filePath = filePath
    self.line = line
    self.column = column
  }
}
