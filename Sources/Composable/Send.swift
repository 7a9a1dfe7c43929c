/// Sends actions back into the store from an asynchronous effect.
///
/// Call it like a function; it is a no-op once the effect's task is cancelled, so a cancelled
/// effect can never feed a stale action back.
///
/// ```swift
/// return .run { send in
///   await send(.timerTicked)
/// }
/// ```
@MainActor
public struct Send<Action>: Sendable {
  let send: @MainActor @Sendable (Action) -> Void

  /// Creates a sender from a closure, e.g. to adapt a child's actions in a test helper.
  ///
  /// - Parameter send: Receives every action.
  public init(send: @escaping @MainActor @Sendable (Action) -> Void) {
    self.send = send
  }

  /// Sends an action back into the store.
  ///
  /// - Parameter action: The action.
  public func callAsFunction(_ action: Action) {
    guard !Task.isCancelled else { return }
    send(action)
  }
}
