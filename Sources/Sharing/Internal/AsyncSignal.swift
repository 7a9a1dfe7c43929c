import Foundation
import Synchronization

/// Lets async code wait, with a deadline, for "something may have changed" signals sent from
/// any thread; waiters re-check their condition after each wake-up.
package final class AsyncSignal: Sendable {
  private let waiters = Mutex<[UUID: CheckedContinuation<Void, Never>]>([:])

  package init() {}

  /// Wakes every waiter.
  package func signal() {
    let waiters = self.waiters.withLock { waiters in
      defer { waiters = [:] }
      return waiters
    }
    for waiter in waiters.values { waiter.resume() }
  }

  /// Suspends until `condition` holds, re-checking after each signal; returns whether it held
  /// before `deadline`.
  package func wait(
    until deadline: ContinuousClock.Instant, for condition: @Sendable () -> Bool
  ) async -> Bool {
    while !condition() {
      guard ContinuousClock.now < deadline, !Task.isCancelled else { return condition() }
      let id = UUID()
      let timer = Task { [self] in
        try? await Task.sleep(until: deadline, clock: .continuous)
        resume(id)
      }
      await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
          // Register first, then re-check, so a signal between the check and here is not lost.
          waiters.withLock { $0[id] = continuation }
          if condition() { resume(id) }
        }
      } onCancel: {
        resume(id)
      }
      timer.cancel()
    }
    return true
  }

  private func resume(_ id: UUID) {
    waiters.withLock { $0.removeValue(forKey: id) }?.resume()
  }
}
