public import CasePaths
internal import Dependencies
internal import IssueReporting

extension Reducer {
  /// Runs a presented child feature while it is presented, before this reducer.
  ///
  /// `.dismiss` runs this reducer first, then removes the child state. When the child state
  /// goes away (dismissed, set to `nil` by this reducer, or replaced by another presentation),
  /// its running effects are cancelled. A child's effects can dismiss it with
  /// `@Dependency(\.dismiss)`.
  ///
  /// ```swift
  /// Reduce { state, action in … }
  ///   .ifLet(\.$destination, action: \.destination) { Detail() }
  /// ```
  ///
  /// - Parameters:
  ///   - toPresentationState: A key path to the ``PresentationState`` (`\.$destination`).
  ///   - toPresentationAction: A case key path to the ``PresentationAction`` case.
  ///   - destination: The child reducer.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs both.
  @inlinable
  public func ifLet<DestinationState, DestinationAction, Destination: Reducer>(
    _ toPresentationState: WritableKeyPath<State, PresentationState<DestinationState>>,
    action toPresentationAction: CaseKeyPath<Action, PresentationAction<DestinationAction>>,
    @ReducerBuilder<DestinationState, DestinationAction> destination: () -> Destination,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> PresentationReducer<Self, Destination>
  where
    DestinationState == Destination.State, DestinationAction == Destination.Action,
    Action: CasePathable
  {
    PresentationReducer(
      parent: self,
      destination: destination(),
      toPresentationState: toPresentationState,
      toPresentationAction: CasePathCache.casePath(toPresentationAction),
      location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
  }

  /// Presents an alert (or a ``ConfirmationDialogState``) whose actions reach this reducer as
  /// `.alert(.presented(…))`; any such action also dismisses it: `.ifLet(\.$alert, action: \.alert)`.
  ///
  /// - Parameters:
  ///   - toPresentationState: A key path to the ``PresentationState``.
  ///   - toPresentationAction: A case key path to the ``PresentationAction`` case.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs this one and dismisses the answered alert.
  @inlinable
  public func ifLet<DestinationState: _EphemeralState, DestinationAction>(
    _ toPresentationState: WritableKeyPath<State, PresentationState<DestinationState>>,
    action toPresentationAction: CaseKeyPath<Action, PresentationAction<DestinationAction>>,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> PresentationReducer<Self, EmptyReducer<DestinationState, DestinationAction>>
  where Action: CasePathable {
    ifLet(
      toPresentationState, action: toPresentationAction, destination: { EmptyReducer() },
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }

  /// Runs the presented case of a `@Reducer enum` of destinations:
  /// `.ifLet(\.$destination, action: \.destination)`.
  ///
  /// - Parameters:
  ///   - toPresentationState: A key path to the ``PresentationState``.
  ///   - toPresentationAction: A case key path to the ``PresentationAction`` case.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs both.
  @inlinable
  public func ifLet<DestinationState: CaseReducerState, DestinationAction>(
    _ toPresentationState: WritableKeyPath<State, PresentationState<DestinationState>>,
    action toPresentationAction: CaseKeyPath<Action, PresentationAction<DestinationAction>>,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> PresentationReducer<Self, DestinationState.StateReducer.Body>
  where DestinationState.StateReducer.Action == DestinationAction, Action: CasePathable {
    ifLet(
      toPresentationState, action: toPresentationAction,
      destination: { DestinationState.StateReducer.body },
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }
}

/// The reducer built by ``Reducer/ifLet(_:action:destination:fileID:filePath:line:column:)``.
public struct PresentationReducer<Parent: Reducer, Destination: Reducer>: Reducer {
  @usableFromInline let parent: Parent
  @usableFromInline let destination: Destination
  @usableFromInline let toPresentationState:
    WritableKeyPath<Parent.State, PresentationState<Destination.State>>
  @usableFromInline let toPresentationAction:
    AnyCasePath<Parent.Action, PresentationAction<Destination.Action>>
  @usableFromInline let location: SourceLocation

  @usableFromInline
  init(
    parent: Parent,
    destination: Destination,
    toPresentationState: WritableKeyPath<Parent.State, PresentationState<Destination.State>>,
    toPresentationAction: AnyCasePath<Parent.Action, PresentationAction<Destination.Action>>,
    location: SourceLocation
  ) {
    self.parent = parent
    self.destination = destination
    self.toPresentationState = toPresentationState
    self.toPresentationAction = toPresentationAction
    self.location = location
  }

  /// Runs the presented child for its actions, then the parent; handles `.dismiss`.
  public func reduce(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    let before = state[keyPath: toPresentationState].presentationID
    var effects: [Effect<Parent.Action>] = []
    switch toPresentationAction.extract(from: action) {
    case .presented(let childAction)?:
      effects.append(reducePresented(into: &state, action: childAction, fullAction: action))
      effects.append(parent.reduce(into: &state, action: action))
      // An answered alert is gone, whichever button answered it.
      if let presented = state[keyPath: toPresentationState].wrappedValue, isEphemeral(presented),
        state[keyPath: toPresentationState].presentationID == before
      {
        state[keyPath: toPresentationState].wrappedValue = nil
      }
    case .dismiss?:
      effects.append(parent.reduce(into: &state, action: action))
      if state[keyPath: toPresentationState].presentationID == before {
        state[keyPath: toPresentationState].wrappedValue = nil
      }
    case nil:
      effects.append(parent.reduce(into: &state, action: action))
    }
    if let before, state[keyPath: toPresentationState].presentationID != before {
      effects.append(.cancel(id: PresentationEffectsID(path: toPresentationState, id: before)))
    }
    return .merge(effects)
  }

  private func reducePresented(
    into state: inout Parent.State, action: Destination.Action, fullAction: Parent.Action
  ) -> Effect<Parent.Action> {
    guard var childState = state[keyPath: toPresentationState].wrappedValue,
      let id = state[keyPath: toPresentationState].presentationID
    else {
      reportIssue(
        """
        An "ifLet" received a presentation action when nothing was presented: \(fullAction)

        The child feature was probably dismissed while one of its effects was still running, \
        or the action was sent to a store of a presentation that has ended.
        """,
        fileID: location.fileID, filePath: location.filePath,
        line: location.line, column: location.column
      )
      return .none
    }
    let effect = destination.reduce(into: &childState, action: action)
    state[keyPath: toPresentationState].wrappedValue = childState
    guard !effect.operation.isNone else { return .none }
    let embed = UncheckedEmbed(toPresentationAction)
    return
      effect
      .map { embed.casePath.embed(.presented($0)) }
      .dismissing(with: toPresentationAction.embed(.dismiss))
      .cancellable(id: PresentationEffectsID(path: toPresentationState, id: id))
  }
}

/// Whether `state` is ephemeral, or an enum case (a destination) that holds ephemeral state.
private func isEphemeral(_ state: Any) -> Bool {
  if state is any _EphemeralState { return true }
  let mirror = Mirror(reflecting: state)
  guard mirror.displayStyle == .enum, let payload = mirror.children.first?.value else {
    return false
  }
  return payload is any _EphemeralState
}

/// Identifies the effects of one presentation, so its end can cancel them.
struct PresentationEffectsID: Hashable, @unchecked Sendable {
  let path: AnyKeyPath
  let id: ObservableStateID
}
