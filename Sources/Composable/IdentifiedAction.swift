public import CasePaths

/// An action addressed to one element of an identified collection, used with
/// ``Reducer/forEach(_:action:element:fileID:filePath:line:column:)``.
///
/// ```swift
/// enum Action { case episodes(IdentifiedActionOf<Episode>) }
/// store.send(.episodes(.element(id: episode.id, action: .favorite(.buttonTapped))))
/// await store.send(\.episodes[id: episode.id].favorite.buttonTapped)   // the same, by case path
/// ```
public enum IdentifiedAction<ID: Hashable & Sendable, Action> {
  /// An action for the element with the given id.
  case element(id: ID, action: Action)
}

extension IdentifiedAction: CasePathable {
  /// The case paths of ``IdentifiedAction``: every element's, or one element's by id.
  public struct AllCasePaths: Sendable {
    /// `.element(id:action:)`.
    public var element: AnyCasePath<IdentifiedAction, (id: ID, action: Action)> {
      AnyCasePath(
        embed: { .element(id: $0.id, action: $0.action) },
        extract: {
          guard case .element(let id, let action) = $0 else { return nil }
          return (id, action)
        }
      )
    }

    /// The actions of the element with id `id`: `\.episodes[id: id].favorite`.
    public subscript(id id: ID) -> AnyCasePath<IdentifiedAction, Action> {
      .element(id: id, of: element)
    }
  }

  /// The case paths.
  public static var allCasePaths: AllCasePaths { AllCasePaths() }
}

extension IdentifiedAction: Equatable where Action: Equatable {}
extension IdentifiedAction: Sendable where Action: Sendable {}

/// An ``IdentifiedAction`` for the elements of a feature whose state is `Identifiable`.
public typealias IdentifiedActionOf<R: Reducer> = IdentifiedAction<R.State.ID, R.Action>
where R.State: Identifiable, R.State.ID: Sendable
