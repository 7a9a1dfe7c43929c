import Foundation

/// Wakes the test store when something it waits for may have happened (an action was received,
/// an effect finished), with a deadline so a broken test fails instead of hanging.
@MainActor
final class ChangeSignal {
  private var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]

  func fire() {
    let waiters = self.waiters
    self.waiters = [:]
    for waiter in waiters.values { waiter.resume() }
  }

  func wait(until deadline: ContinuousClock.Instant) async {
    let id = UUID()
    let timer = Task { @MainActor [weak self] in
      try? await Task.sleep(until: deadline, clock: .continuous)
      self?.waiters.removeValue(forKey: id)?.resume()
    }
    await withCheckedContinuation { waiters[id] = $0 }
    timer.cancel()
  }
}
