internal import ConcurrencyExtras
internal import Dependencies
internal import DequeModule
internal import IssueReporting
internal import Sharing

/// The state, reducer and effect runner at the top of a store tree. Child stores read and send
/// through it; it runs actions one at a time and tells observers when state may have changed.
@MainActor
final class RootStore<State, Action> {
  private(set) var state: State
  private let reduce: @MainActor (inout State, Action) -> Effect<Action>
  /// Changeable between actions, by a test store.
  var dependencies: DependencyValues
  private let sharedChangeTracker: SharedChangeTracker?
  private var bufferedActions: Deque<Action> = []
  /// Whether `bufferedActions` has any: a send that buffers nothing (most of them) then never
  /// touches the deque, whose every use from this generic class looks up its metadata.
  private var hasBufferedActions = false
  private var isSending = false
  private var observers: [Int: @MainActor () -> Void] = [:]
  private var nextObserverID = 0
  private var sharedSubscription: SharedChangeSubscription?
  private(set) lazy var runner = EffectRunner<Action>(send: { [weak self] action in
    self?.send(action)
  })

  init(
    initialState: State,
    reduce: @escaping @MainActor (inout State, Action) -> Effect<Action>,
    dependencies: DependencyValues,
    sharedChangeTracker: SharedChangeTracker? = nil
  ) {
    self.state = initialState
    self.reduce = reduce
    self.dependencies = dependencies
    self.sharedChangeTracker = sharedChangeTracker
    // A @Shared value in the state can change outside the reducer (another feature, another
    // process); observers must hear about it too.
    sharedSubscription = SharedChangeSubscription { [weak self] in
      onMainActor { self?.sharedValueChanged() }
    }
  }

  isolated deinit {
    runner.cancelAll()
  }

  /// Runs `action` and every action it causes synchronously, in FIFO order, never re-entrantly
  /// (an action sent while sending is buffered and runs after the current one).
  @discardableResult
  func send(_ action: Action) -> EffectHandle? {
    guard !isSending else {
      bufferedActions.append(action)
      hasBufferedActions = true
      return nil
    }
    isSending = true
    var handles: [EffectHandle] = []
    SharedChangeTracker.$current.withValue(sharedChangeTracker) {
      DependencyValues.$_current.withValue(dependencies) {
        if let handle = runner.run(reduce(&state, action)) { handles.append(handle) }
        var count = 1
        while hasBufferedActions {
          let action = bufferedActions.removeFirst()
          hasBufferedActions = !bufferedActions.isEmpty
          count += 1
          guard count <= Self.maxActionsPerSend else {
            reportFeedbackLoop(lastAction: action)
            bufferedActions.removeAll()
            hasBufferedActions = false
            break
          }
          if let handle = runner.run(reduce(&state, action)) { handles.append(handle) }
        }
      }
    }
    isSending = false
    notifyObservers()
    switch handles.count {
    case 0: return nil
    case 1: return handles[0]
    default:
      let handle = EffectHandle(cancel: { for handle in handles { handle.cancel() } })
      var remaining = handles.count
      for child in handles {
        child.onFinish {
          remaining -= 1
          if remaining == 0 { handle.finish() }
        }
      }
      return handle
    }
  }

  /// More actions than this in one send, all caused synchronously by the first, is a loop.
  static var maxActionsPerSend: Int { 10_000 }

  private func reportFeedbackLoop(lastAction: Action) {
    reportIssue(
      """
      Feedback loop detected: one send caused \(Self.maxActionsPerSend) more actions \
      synchronously, the last one being:

        \(lastAction)

      A publisher effect (such as "$shared.publisher") whose action writes the value it \
      observes loops forever. The remaining buffered actions were dropped.
      """
    )
  }

  /// Registers `observer`, called after every send and every outside change of shared state.
  func addObserver(_ observer: @escaping @MainActor () -> Void) -> Int {
    nextObserverID += 1
    observers[nextObserverID] = observer
    return nextObserverID
  }

  func removeObserver(_ id: Int) {
    observers[id] = nil
  }

  /// While sending, the end of the send notifies anyway.
  private func sharedValueChanged() {
    guard !isSending else { return }
    notifyObservers()
  }

  private func notifyObservers() {
    for observer in observers.values { observer() }
  }
}
