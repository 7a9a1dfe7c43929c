import Synchronization

/// A closure that runs at most once, whichever thread asks first.
final class LockedCallback: Sendable {
  private let callback: Mutex<(@Sendable () -> Void)?>

  init(_ callback: @escaping @Sendable () -> Void) {
    self.callback = Mutex(callback)
  }

  func callOnce() {
    let callback = self.callback.withLock { callback in
      defer { callback = nil }
      return callback
    }
    callback?()
  }
}
