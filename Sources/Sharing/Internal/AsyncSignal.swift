import Foundation
import Synchronization

/// Lets async code wait, with a deadline, for "something may have changed" signals sent from
/// any thread; waiters re-check their condition after each wake-up.
package final class AsyncSignal: Sendable {
  private enum Waiter {
    case waiting(CheckedContinuation<Void, Never>)
    /// Woken before (or after) it registered: the deadline timer or a cancellation can fire
    /// before the waiter has stored its continuation, and that wake-up must not be lost.
    case woken
  }

  private let waiters = Mutex<[UUID: Waiter]>([:])

  package init() {}

  /// Wakes every waiter.
  package func signal() {
    let continuations = waiters.withLock { waiters in
      // Nobody waits, as a rule: iterating even an empty dictionary of this generic type
      // cost a client's I/O thread some 500 instructions per update.
      guard !waiters.isEmpty else { return [CheckedContinuation<Void, Never>]() }
      var continuations: [CheckedContinuation<Void, Never>] = []
      for (id, waiter) in waiters {
        guard case let .waiting(continuation) = waiter else { continue }
        continuations.append(continuation)
        waiters[id] = nil
      }
      return continuations
    }
    for continuation in continuations { continuation.resume() }
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
        wake(id)
      }
      await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
          let woken = waiters.withLock { waiters in
            if case .woken = waiters[id] { return true }
            waiters[id] = .waiting(continuation)
            return false
          }
          // Registered first, then re-checked, so a signal between the check and here is not lost.
          if woken {
            continuation.resume()
          } else if condition() {
            wake(id)
          }
        }
      } onCancel: {
        wake(id)
      }
      timer.cancel()
      await timer.value
      waiters.withLock { _ = $0.removeValue(forKey: id) }
    }
    return true
  }

  private func wake(_ id: UUID) {
    let continuation = waiters.withLock { waiters -> CheckedContinuation<Void, Never>? in
      defer { waiters[id] = .woken }
      guard case let .waiting(continuation) = waiters[id] else { return nil }
      return continuation
    }
    continuation?.resume()
  }
}
