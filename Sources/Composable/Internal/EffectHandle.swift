/// One running effect as the store sees it: something to cancel and something to await.
@MainActor
final class EffectHandle {
  private var cancelAction: (() -> Void)?
  private var waiters: [CheckedContinuation<Void, Never>] = []
  private var finishCallbacks: [@MainActor () -> Void] = []
  private(set) var isFinished = false
  private(set) var isCancelled = false

  init(cancel: (() -> Void)? = nil) {
    cancelAction = cancel
  }

  func setCancel(_ cancel: @escaping () -> Void) {
    if isCancelled { cancel() } else { cancelAction = cancel }
  }

  /// Stops the work and counts the effect as finished at once: a cancelled effect can no longer
  /// send, so nothing needs to wait for its task to unwind.
  func cancel() {
    guard !isFinished else { return }
    isCancelled = true
    let action = cancelAction
    cancelAction = nil
    action?()
    finish()
  }

  func finish() {
    guard !isFinished else { return }
    isFinished = true
    cancelAction = nil
    let waiters = self.waiters
    let callbacks = finishCallbacks
    self.waiters = []
    finishCallbacks = []
    for waiter in waiters { waiter.resume() }
    for callback in callbacks { callback() }
  }

  func onFinish(_ callback: @escaping @MainActor () -> Void) {
    if isFinished { callback() } else { finishCallbacks.append(callback) }
  }

  /// Suspends until the effect finishes or is cancelled.
  func wait() async {
    guard !isFinished else { return }
    await withCheckedContinuation { waiters.append($0) }
  }
}
