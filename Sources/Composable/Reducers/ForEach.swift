public import CasePaths
public import IdentifiedCollections
internal import IssueReporting
internal import OrderedCollections

extension Reducer {
  /// Runs an element reducer on the element of an identified collection that an
  /// ``IdentifiedAction`` addresses, before this reducer.
  ///
  /// When an element is removed, its running effects are cancelled.
  ///
  /// ```swift
  /// Reduce { state, action in ... }
  ///   .forEach(\.episodes, action: \.episodes) { Episode() }
  /// ```
  ///
  /// - Parameters:
  ///   - toElements: A key path to the collection.
  ///   - toElementAction: A case key path to the element actions.
  ///   - element: The element reducer.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A reducer that runs both.
  @inlinable
  public func forEach<ElementState, ElementAction, ID: Hashable & Sendable, Element: Reducer>(
    _ toElements: WritableKeyPath<State, IdentifiedArray<ID, ElementState>>,
    action toElementAction: CaseKeyPath<Action, IdentifiedAction<ID, ElementAction>>,
    @ReducerBuilder<ElementState, ElementAction> element: () -> Element,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> ForEachReducer<Self, ID, Element>
  where ElementState == Element.State, ElementAction == Element.Action, Action: CasePathable {
    ForEachReducer(
      parent: self,
      element: element(),
      toElements: toElements,
      toElementAction: CasePathCache.casePath(toElementAction),
      location: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
  }
}

/// The reducer built by ``Reducer/forEach(_:action:element:fileID:filePath:line:column:)``.
public struct ForEachReducer<Parent: Reducer, ID: Hashable & Sendable, Element: Reducer>: Reducer {
  @usableFromInline let parent: Parent
  @usableFromInline let element: Element
  @usableFromInline let toElements: WritableKeyPath<Parent.State, IdentifiedArray<ID, Element.State>>
  @usableFromInline let toElementAction:
    AnyCasePath<Parent.Action, IdentifiedAction<ID, Element.Action>>
  @usableFromInline let location: SourceLocation

  @usableFromInline
  init(
    parent: Parent,
    element: Element,
    toElements: WritableKeyPath<Parent.State, IdentifiedArray<ID, Element.State>>,
    toElementAction: AnyCasePath<Parent.Action, IdentifiedAction<ID, Element.Action>>,
    location: SourceLocation
  ) {
    self.parent = parent
    self.element = element
    self.toElements = toElements
    self.toElementAction = toElementAction
    self.location = location
  }

  /// Runs the addressed element (when it exists) and then the parent.
  public func reduce(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    let elementEffect = reduceElement(into: &state, action: action)
    let idsBefore = state[keyPath: toElements].ids
    let parentEffect = parent.reduce(into: &state, action: action)
    let removed = idsBefore.subtracting(state[keyPath: toElements].ids)
    return .merge(
      [elementEffect, parentEffect]
        + removed.map { .cancel(id: ElementEffectsID(path: toElements, id: $0)) }
    )
  }

  private func reduceElement(
    into state: inout Parent.State, action: Parent.Action
  ) -> Effect<Parent.Action> {
    guard case let .element(id, elementAction)? = toElementAction.extract(from: action) else {
      return .none
    }
    guard state[keyPath: toElements][id: id] != nil else {
      reportIssue(
        """
        A "forEach" received an action for a missing element (id: \(id)): \(action)

        The element was probably removed while one of its effects was still running.
        """,
        fileID: location.fileID, filePath: location.filePath,
        line: location.line, column: location.column
      )
      return .none
    }
    let effect = element.reduce(into: &state[keyPath: toElements][id: id]!, action: elementAction)
    let embed = UncheckedEmbed(toElementAction)
    return effect
      .map { embed.casePath.embed(.element(id: id, action: $0)) }
      .cancellable(id: ElementEffectsID(path: toElements, id: id))
  }
}

/// Identifies the effects of one element so its removal can cancel them.
struct ElementEffectsID<ID: Hashable & Sendable>: Hashable, @unchecked Sendable {
  let path: AnyKeyPath
  let id: ID
}
