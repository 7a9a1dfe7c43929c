internal import CasePaths

extension AnyCasePath {
  /// The actions of the element with id `id`, from the case path of every element's actions:
  /// what `[id:]` of ``IdentifiedAction`` and ``StackAction`` is.
  static func element<ID: Hashable & Sendable>(
    id: ID, of element: AnyCasePath<Root, (id: ID, action: Value)>
  ) -> Self {
    AnyCasePath(
      embed: { element.embed((id, $0)) },
      extract: { root in
        guard let (elementID, action) = element.extract(from: root), elementID == id else {
          return nil
        }
        return action
      }
    )
  }
}
