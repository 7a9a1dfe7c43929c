#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The current thread's nesting inside shared values' locks (a `withLock` body, and the
/// bookkeeping around it), and the observer deliveries held back until it leaves the outermost:
/// no observer ever runs under a shared value's lock, so an observer that writes a value whose
/// lock another thread holds cannot wait on a thread that waits on it.
package enum LockedRegion {
  /// The thread's depth and held-back deliveries (one per thread, made on first use).
  private final class Frame {
    var depth = 0
    var held: [() -> Void] = []
  }

  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    let created = pthread_key_create(&key) { frame in
      guard let frame else { return }
      Unmanaged<AnyObject>.fromOpaque(frame).release()
    }
    precondition(created == 0, "pthread_key_create failed: \(created)")
    return key
  }()

  private static var frame: Frame {
    if let stored = pthread_getspecific(key) {
      return Unmanaged<Frame>.fromOpaque(stored).takeUnretainedValue()
    }
    let frame = Frame()
    pthread_setspecific(key, Unmanaged.passRetained(frame).toOpaque())
    return frame
  }

  /// Runs `body` as part of the region: deliveries asked for meanwhile wait until the thread
  /// leaves its outermost region, and run then, after every lock is released.
  package static func run<R>(_ body: () throws -> R) rethrows -> R {
    let frame = self.frame
    frame.depth += 1
    defer {
      frame.depth -= 1
      if frame.depth == 0, !frame.held.isEmpty { release(frame) }
    }
    return try body()
  }

  /// Whether the current thread is in a region: deliveries must be held back.
  package static var isActive: Bool {
    guard let stored = pthread_getspecific(key) else { return false }
    return Unmanaged<Frame>.fromOpaque(stored).takeUnretainedValue().depth > 0
  }

  /// Runs `delivery` when the thread leaves its outermost region (at once outside any).
  package static func holdBack(_ delivery: @escaping () -> Void) {
    let frame = self.frame
    guard frame.depth > 0 else { return delivery() }
    frame.held.append(delivery)
  }

  private static func release(_ frame: Frame) {
    // A delivery may write shared values again and hold back deliveries of its own: those run
    // after it, in order.
    while !frame.held.isEmpty {
      let held = frame.held
      frame.held = []
      for delivery in held { delivery() }
    }
  }
}
