internal import CustomDump
internal import IssueReporting
internal import Synchronization

extension Store where State: ObservableState, Action: BindableAction, Action.State == State {
  /// Reads a field of the state, and sets it by sending a ``BindingAction``: what a form's
  /// text field or toggle does (`$store.name` in SwiftUI).
  ///
  /// ```swift
  /// store.name = "Blob"   // sends .binding(.set(\.name, "Blob"))
  /// ```
  ///
  /// When no ``BindingReducer`` applies the action, an issue is reported, as in TCA.
  public subscript<Value: Equatable & Sendable>(
    dynamicMember keyPath: WritableKeyPath<State, Value>
  ) -> Value {
    get { state[keyPath: keyPath] }
    set {
      let check = UnhandledBindingCheck(state: "\(State.self)", value: newValue)
      send(.binding(.set(keyPath, newValue, onSet: { check.handled() })))
    }
  }
}

/// Reports a binding action that was dropped without being applied: it goes away with the last
/// copy of the action, which a store drops once it reduced it (later, when it was buffered).
private final class UnhandledBindingCheck: Sendable {
  private let state: String
  private let value: any Sendable
  private let wasHandled = Mutex(false)

  init(state: String, value: any Sendable) {
    self.state = state
    self.value = value
  }

  func handled() {
    wasHandled.withLock { $0 = true }
  }

  deinit {
    guard !wasHandled.withLock({ $0 }) else { return }
    reportIssue(
      """
      A binding action sent from a store (setting a field of "\(state)" to \
      \(String(customDumping: value))) was not handled: the state did not change.

      To fix this, add "BindingReducer()" to your feature's "body".
      """
    )
  }
}
