import Foundation
import Synchronization

/// Runs each body on a thread of its own (not the cooperative pool, which a body that hangs
/// would block) and returns when all have.
public func onThreads(_ bodies: (@Sendable () -> Void)...) async {
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    let left = Mutex(bodies.count)
    for body in bodies {
      Thread {
        body()
        if left.withLock({ left in
          left -= 1
          return left == 0
        }) {
          continuation.resume()
        }
      }.start()
    }
  }
}
