public import CasePaths
internal import Dependencies
internal import IssueReporting

extension Reducer {
  /// Runs the screens of a navigation stack, before this reducer: an element's actions reach
  /// its reducer, `popFrom` and `push` change the stack after this reducer ran.
  ///
  /// A popped element's running effects are cancelled, and an element's effects can pop it with
  /// `@Dependency(\.dismiss)`.
  ///
  /// ```swift
  /// Reduce { state, action in … }
  ///   .forEach(\.path, action: \.path) { Detail() }
  /// ```
  ///
  /// - Parameters:
  ///   - toStackState: A key path to the ``StackState``.
  ///   - toStackAction: A case key path to the ``StackAction`` case.
  ///   - destination: The reducer of every element.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs both.
  @inlinable
  public func forEach<DestinationState, DestinationAction, Destination: Reducer>(
    _ toStackState: WritableKeyPath<State, StackState<DestinationState>>,
    action toStackAction: CaseKeyPath<Action, StackAction<DestinationState, DestinationAction>>,
    @ReducerBuilder<DestinationState, DestinationAction> destination: () -> Destination,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> StackReducer<Self, Destination>
  where
    DestinationState == Destination.State, DestinationAction == Destination.Action,
    Action: CasePathable
  {
    StackReducer(
      parent: self,
      destination: destination(),
      toStackState: toStackState,
      toStackAction: CasePathCache.casePath(toStackAction),
      location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
  }

  /// Runs the screens of a navigation stack whose elements are the cases of a `@Reducer enum`:
  /// `.forEach(\.path, action: \.path)`.
  ///
  /// - Parameters:
  ///   - toStackState: A key path to the ``StackState``.
  ///   - toStackAction: A case key path to the ``StackAction`` case.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs both.
  @inlinable
  public func forEach<DestinationState: CaseReducerState, DestinationAction>(
    _ toStackState: WritableKeyPath<State, StackState<DestinationState>>,
    action toStackAction: CaseKeyPath<Action, StackAction<DestinationState, DestinationAction>>,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> StackReducer<Self, DestinationState.StateReducer.Body>
  where DestinationState.StateReducer.Action == DestinationAction, Action: CasePathable {
    forEach(
      toStackState, action: toStackAction, destination: { DestinationState.StateReducer.body },
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }
}

/// The reducer built by ``Reducer/forEach(_:action:destination:fileID:filePath:line:column:)``.
public struct StackReducer<Parent: Reducer, Destination: Reducer>: Reducer {
  @usableFromInline let parent: Parent
  @usableFromInline let destination: Destination
  @usableFromInline let toStackState: WritableKeyPath<Parent.State, StackState<Destination.State>>
  @usableFromInline let toStackAction:
    AnyCasePath<Parent.Action, StackAction<Destination.State, Destination.Action>>
  @usableFromInline let location: SourceLocation

  @usableFromInline
  init(
    parent: Parent,
    destination: Destination,
    toStackState: WritableKeyPath<Parent.State, StackState<Destination.State>>,
    toStackAction: AnyCasePath<Parent.Action, StackAction<Destination.State, Destination.Action>>,
    location: SourceLocation
  ) {
    self.parent = parent
    self.destination = destination
    self.toStackState = toStackState
    self.toStackAction = toStackAction
    self.location = location
  }

  /// Runs the addressed element, then the parent, then applies a pop or a push; cancels the
  /// effects of every element that is gone.
  public func reduce(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    let idsBefore = state[keyPath: toStackState].ids
    var effects: [Effect<Parent.Action>] = []
    switch toStackAction.extract(from: action) {
    case .element(let id, let elementAction)?:
      effects.append(reduceElement(id: id, action: elementAction, into: &state, fullAction: action))
      effects.append(parent.reduce(into: &state, action: action))
    case .popFrom(let id)?:
      effects.append(parent.reduce(into: &state, action: action))
      if state[keyPath: toStackState][id: id] == nil {
        report(
          """
          A "forEach" received a "popFrom" action for a missing element (id: \(id)): \(action)

          The element was probably popped already, or never pushed.
          """
        )
      }
      state[keyPath: toStackState].pop(from: id)
    case .push(let id, let element)?:
      effects.append(parent.reduce(into: &state, action: action))
      push(element, id: id, into: &state)
    case nil:
      effects.append(parent.reduce(into: &state, action: action))
    }
    let ids = state[keyPath: toStackState].ids
    if ids != idsBefore {
      for id in idsBefore where !ids.contains(id) {
        effects.append(.cancel(id: StackElementEffectsID(path: toStackState, id: id)))
      }
    }
    return .merge(effects)
  }

  private func reduceElement(
    id: StackElementID, action: Destination.Action, into state: inout Parent.State,
    fullAction: Parent.Action
  ) -> Effect<Parent.Action> {
    guard state[keyPath: toStackState][id: id] != nil else {
      report(
        """
        A "forEach" received an action for a missing element (id: \(id)): \(fullAction)

        The element was probably popped while one of its effects was still running, or the \
        action was sent to a store of a screen that is gone.
        """
      )
      return .none
    }
    let effect = destination.reduce(into: &state[keyPath: toStackState][id: id]!, action: action)
    guard !effect.operation.isNone else { return .none }
    let embed = UncheckedEmbed(toStackAction)
    return
      effect
      .map { embed.casePath.embed(.element(id: id, action: $0)) }
      .dismissing(with: toStackAction.embed(.popFrom(id: id)))
      .cancellable(id: StackElementEffectsID(path: toStackState, id: id))
  }

  /// Adds a pushed element, unless its id is taken or not handed out yet: ids only grow.
  private func push(
    _ element: Destination.State, id: StackElementID, into state: inout Parent.State
  ) {
    guard !state[keyPath: toStackState].ids.contains(id) else {
      report(
        """
        A "forEach" received a "push" action for an element it already contains (id: \(id)).

        Push each element with a new id, the next one the store hands out.
        """
      )
      return
    }
    let nextID = DependencyValues._current.stackElementID
    // Checked in tests only, as TCA does: there, ids are deterministic and name elements.
    guard !isTesting || id <= nextID.peek() else {
      report(
        """
        A "forEach" received a "push" action with an id that was not handed out yet: \
        expected \(nextID.peek()) or earlier, received \(id).

        In tests, ids count up from 0 with every element added to a stack of the store.
        """
      )
      return
    }
    nextID.skip(past: id)
    state[keyPath: toStackState].push(element, id: id)
  }

  private func report(_ message: String) {
    reportIssue(
      message,
      fileID: location.fileID, filePath: location.filePath,
      line: location.line, column: location.column
    )
  }
}

/// Identifies the effects of one stack element so that popping it can cancel them.
struct StackElementEffectsID: Hashable, @unchecked Sendable {
  let path: AnyKeyPath
  let id: StackElementID
}
