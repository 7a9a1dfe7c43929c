import Foundation
import Synchronization
import Sharing
import Testing

/// The wait behind `waitUntilConfirmed` and `TestStore`: a deadline or a cancellation that
/// fires before the waiter has registered must still end the wait.
@Suite(.timeLimit(.minutes(1)))
struct AsyncSignalTests {
  @Test func deadlinesThatPassWhileTheWaiterRegistersStillEndTheWait() async {
    let signal = AsyncSignal()
    var timedOut = 0
    for _ in 0..<5_000 {
      if await !signal.wait(until: .now + .microseconds(20), for: { false }) { timedOut += 1 }
    }
    #expect(timedOut == 5_000)
  }

  @Test func aSignalWakesTheWaiterOnceItsConditionHolds() async {
    let signal = AsyncSignal()
    let flag = Mutex(false)
    async let held = signal.wait(until: .now + .seconds(30)) { flag.withLock { $0 } }
    flag.withLock { $0 = true }
    signal.signal()
    #expect(await held)
  }
}
