public import CasePaths

/// An action addressed to one element of an identified collection, used with
/// ``Reducer/forEach(_:action:element:fileID:filePath:line:column:)``.
///
/// ```swift
/// enum Action { case episodes(IdentifiedActionOf<Episode>) }
/// store.send(.episodes(.element(id: episode.id, action: .favorite(.buttonTapped))))
/// ```
@CasePathable
public enum IdentifiedAction<ID: Hashable & Sendable, Action>: CasePathable {
  /// An action for the element with the given id.
  case element(id: ID, action: Action)
}

extension IdentifiedAction: Equatable where Action: Equatable {}
extension IdentifiedAction: Sendable where Action: Sendable {}

/// An ``IdentifiedAction`` for the elements of a feature whose state is `Identifiable`.
public typealias IdentifiedActionOf<R: Reducer> = IdentifiedAction<R.State.ID, R.Action>
where R.State: Identifiable, R.State.ID: Sendable
