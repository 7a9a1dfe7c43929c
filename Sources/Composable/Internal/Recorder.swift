/// Watches a test store's reducer: keeps the state right after the action the test sent, and
/// every action that effects sent back, with the state it produced.
@MainActor
final class Recorder<State, Action> {
  var received: [(action: Action, state: State)] = []
  var onReceive: (@MainActor () -> Void)?
  private var expectingUserAction = false
  private var userActionState: State?

  func expectUserAction() {
    expectingUserAction = true
    userActionState = nil
  }

  func record(_ action: Action, state: State) {
    if expectingUserAction {
      expectingUserAction = false
      userActionState = state
    } else {
      received.append((action, state))
      onReceive?()
    }
  }

  func takeUserActionState() -> State? {
    defer { userActionState = nil }
    return userActionState
  }
}
