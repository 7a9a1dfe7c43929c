import Foundation
import OpenCombine
import Synchronization
import TestSupport
import Testing

@testable import Sharing

@Suite(.timeLimit(.minutes(1)))
struct ReferenceNotifierTests {
  @Test func aStaleOrRepeatedStampIsNotTold() {
    let notifier = ReferenceNotifier(initialValue: 0) { "counter" }
    var told: [Int] = []
    let subscription = notifier.publisher.sink { told.append($0) }
    notifier.notify(1, stamp: 2)
    notifier.notify(5, stamp: 1)
    notifier.notify(1, stamp: 2)
    notifier.notify(3, stamp: 3)
    #expect(told == [0, 1, 3])
    subscription.cancel()
  }

  @Test func aChangeMadeWhileObserversAreToldReachesEveryObserverAfterTheOneBefore() {
    let shared = Shared(value: 0)
    var first: [Int] = []
    var second: [Int] = []
    let writer = shared.publisher.sink { value in
      first.append(value)
      if value == 1 { shared.withLock { $0 = 2 } }
    }
    let reader = shared.publisher.sink { second.append($0) }
    shared.withLock { $0 = 1 }
    // The second observer hears 1 before 2, though the first wrote 2 while being told of 1.
    #expect(first == [0, 1, 2])
    #expect(second == [0, 1, 2])
    writer.cancel()
    reader.cancel()
  }

  @Test func observersAreToldOnlyOnceEveryLockIsReleased() {
    let outer = Shared(value: 0)
    let inner = Shared(value: 0)
    let outerValueWhenTold = Mutex<[Int]>([])
    let subscription = inner.publisher.dropFirst().sink { _ in
      outerValueWhenTold.withLock { $0.append(outer.wrappedValue) }
    }
    outer.withLock { value in
      inner.withLock { $0 = 1 }
      value = 1
    }
    #expect(outerValueWhenTold.withLock { $0 } == [1])
    subscription.cancel()
  }

  @Test func observersThatWriteAcrossThreadsAndLocksDoNotDeadlock() async {
    // One thread writes `y` inside `x`'s lock; the other writes `y` alone, so it tells `y`'s
    // observer, which writes `x`. Told under the locks, each would wait for the other.
    let x = Shared(value: 0)
    let y = Shared(value: 0)
    let subscription = y.publisher.sink { _ in x.withLock { $0 += 1 } }
    await onThreads(
      { for _ in 0..<2_000 { x.withLock { _ in y.withLock { $0 += 1 } } } },
      { for _ in 0..<2_000 { y.withLock { $0 += 1 } } })
    #expect(y.wrappedValue == 4_000)
    // Each write of y was told at least once more after the writes of both threads, at most once.
    #expect(x.wrappedValue >= 1)
    #expect(x.wrappedValue <= 4_001)
    subscription.cancel()
  }
}
