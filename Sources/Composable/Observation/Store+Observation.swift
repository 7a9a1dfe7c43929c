public import Observation

extension Store: Observable {}

extension Store {
  /// Reads `State`'s identity, or `nil` when the state is not ``ObservableState``.
  static func identityReader() -> ((State) -> ObservableStateID)? {
    guard let type = State.self as? any ObservableState.Type else { return nil }
    return identityReader(type)
  }

  private static func identityReader<S: ObservableState>(
    _: S.Type
  ) -> (State) -> ObservableStateID {
    { ($0 as! S)._$id }
  }
}
