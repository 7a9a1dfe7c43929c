/// A type that holds a store whose actions have view actions, and sends them with
/// ``send(_:)``; ``ViewAction(for:)`` conforms a type to it.
public protocol ViewActionSending<StoreState, StoreAction> {
  /// The feature's state.
  associatedtype StoreState
  /// The feature's actions.
  associatedtype StoreAction: ViewAction

  /// The feature's store.
  @MainActor var store: Store<StoreState, StoreAction> { get }
}

extension ViewActionSending {
  /// Sends a view action: `send(.loginButtonTapped)` is `store.send(.view(.loginButtonTapped))`.
  ///
  /// - Parameter action: The view action.
  /// - Returns: A task for the effects it started.
  @MainActor
  @discardableResult
  public func send(_ action: StoreAction.ViewAction) -> StoreTask {
    store.send(.view(action))
  }
}
