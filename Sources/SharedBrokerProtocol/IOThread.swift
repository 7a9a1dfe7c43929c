import Dispatch
import Foundation
import Synchronization

/// A dedicated thread that alone owns some ZeroMQ sockets, and ways to wait for its end from
/// async and blocking code alike.
package final class IOThread: Sendable {
  private let state = Mutex<(finished: Bool, waiters: [CheckedContinuation<Void, Never>])>(
    (false, [])
  )
  private let done = DispatchSemaphore(value: 0)
  /// The thread, once it runs.
  private let running = Mutex<pthread_t?>(nil)

  /// Starts `body` on a thread called `name` (at most 15 bytes, as `top` and `perf` show it).
  package init(name: String, body: @escaping @Sendable () -> Void) {
    let thread = Thread { [self] in
      // Foundation's `Thread.name` does not reach the kernel on Linux.
      try? name.write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
      running.withLock { $0 = pthread_self() }
      body()
      let waiters = state.withLock { state in
        state.finished = true
        defer { state.waiters = [] }
        return state.waiters
      }
      for waiter in waiters { waiter.resume() }
      done.signal()
    }
    thread.name = name
    thread.start()
  }

  package var isFinished: Bool { state.withLock { $0.finished } }

  /// Whether the caller runs on this thread (which cannot wait for itself).
  package var isCurrent: Bool {
    running.withLock { thread in thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
  }

  /// Suspends until the thread's body returned.
  package func join() async {
    await withCheckedContinuation { continuation in
      let finished = state.withLock { state in
        if !state.finished { state.waiters.append(continuation) }
        return state.finished
      }
      if finished { continuation.resume() }
    }
  }

  /// Blocks until the thread's body returned.
  package func joinBlocking() {
    guard !isFinished else { return }
    done.wait()
    done.signal()
  }
}
