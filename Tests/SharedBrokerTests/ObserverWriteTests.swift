import Foundation
import OpenCombine
import SharedBroker
import SharedBrokerTesting
import Sharing
import Synchronization
import Testing

/// Observers that write shared values, from threads of their own, while other threads and
/// another client write the same keys: nothing hangs, loses or doubles a write.
@Suite(.timeLimit(.minutes(1)))
struct ObserverWriteTests {
  @Test func anObserverClampsTheValueItObservesWhileItsProcessAndAnotherWriteIt() async throws {
    try await withBrokerFixture { fixture in
      let (clientA, clientB) = (fixture.makeClient(), fixture.makeClient())
      let a = await inProcess(clientA) { Shared(wrappedValue: 0, .broker("count")) }
      let b = await inProcess(clientB) { Shared(wrappedValue: 0, .broker("count")) }
      try await clientA.waitUntilConnected()
      try await clientB.waitUntilConnected()
      let clamps = Atomic(0)
      let clamp = a.publisher.sink { value in
        guard value > 1_000 else { return }
        clamps.add(1, ordering: .relaxed)
        a.withLock { $0 = min($0, 1_000) }
      }
      await onThreads(
        { for _ in 0..<3_000 { a.withLock { $0 += 7 } } },
        { for _ in 0..<3_000 { b.withLock { $0 += 5 } } })
      let agreed = try await settle(clientA, clientB, watching: [a.changes, b.changes]) {
        a.wrappedValue == b.wrappedValue
      }
      #expect(agreed)
      #expect(a.wrappedValue <= 1_000)
      #expect(clamps.load(ordering: .relaxed) > 0)
      clamp.cancel()
      clientA.close()
      clientB.close()
    }
  }

  @Test func observersOfTwoKeysWriteEachOthersKeyBack() async throws {
    try await withBrokerFixture { fixture in
      let (clientA, clientB) = (fixture.makeClient(), fixture.makeClient())
      let (x, y) = await inProcess(clientA) {
        (Shared(wrappedValue: 0, .broker("x")), Shared(wrappedValue: 0, .broker("y")))
      }
      let remoteX = await inProcess(clientB) { Shared(wrappedValue: 0, .broker("x")) }
      try await clientA.waitUntilConnected()
      try await clientB.waitUntilConnected()
      // Each raises the other key to its own value: a chain that ends once both agree.
      let raiseY = x.publisher.sink { value in
        if y.wrappedValue < value { y.withLock { $0 = max($0, value) } }
      }
      let raiseX = y.publisher.sink { value in
        if x.wrappedValue < value { x.withLock { $0 = max($0, value) } }
      }
      await onThreads(
        { for _ in 0..<1_000 { x.withLock { $0 += 1 } } },
        { for _ in 0..<1_000 { y.withLock { $0 += 1 } } },
        { for _ in 0..<1_000 { remoteX.withLock { $0 += 1 } } })
      let agreed = try await settle(
        clientA, clientB, watching: [x.changes, y.changes, remoteX.changes]
      ) {
        x.wrappedValue == y.wrappedValue && remoteX.wrappedValue == x.wrappedValue
      }
      #expect(agreed)
      // Every increment of x counts once, whichever client made it; y only ever catches up.
      #expect(x.wrappedValue >= 2_000)
      raiseX.cancel()
      raiseY.cancel()
      clientA.close()
      clientB.close()
    }
  }

  @Test func aMutationThatReadsTwoOtherKeysIsRebasedOnceForEachWrite() async throws {
    try await withBrokerFixture { fixture in
      let (clientA, clientB) = (fixture.makeClient(), fixture.makeClient())
      let (total, x, y) = await inProcess(clientA) {
        (
          Shared(wrappedValue: Stats(), .broker("total")), Shared(wrappedValue: 0, .broker("x")),
          Shared(wrappedValue: 0, .broker("y"))
        )
      }
      let (remoteTotal, remoteX) = await inProcess(clientB) {
        (Shared(wrappedValue: Stats(), .broker("total")), Shared(wrappedValue: 0, .broker("x")))
      }
      try await clientA.waitUntilConnected()
      try await clientB.waitUntilConnected()
      // The other client's writes of `total` make every pending mutation of ours be re-applied,
      // and each reads x and y, which change under it, while an observer writes `total` too.
      let echo = x.publisher.sink { value in
        if value % 100 == 0 { total.withLock { $0.numberOfCounts += 1 } }
      }
      await onThreads(
        {
          for _ in 0..<2_000 {
            total.withLock { $0.count += 1 + 0 * (x.wrappedValue + y.wrappedValue) }
          }
        },
        { for _ in 0..<2_000 { remoteTotal.withLock { $0.count += 1 } } },
        { for _ in 0..<1_000 { x.withLock { $0 += 1 } } },
        { for _ in 0..<1_000 { remoteX.withLock { $0 += 1 } } },
        { for _ in 0..<1_000 { y.withLock { $0 += 1 } } })
      let agreed = try await settle(
        clientA, clientB,
        watching: [total.changes, remoteTotal.changes, x.changes, remoteX.changes]
      ) {
        total.wrappedValue == remoteTotal.wrappedValue && x.wrappedValue == remoteX.wrappedValue
      }
      #expect(agreed)
      #expect(total.wrappedValue.count == 4_000)
      #expect(x.wrappedValue == 2_000)
      #expect(y.wrappedValue == 1_000)
      echo.cancel()
      clientA.close()
      clientB.close()
    }
  }

  @Test func anObserverWritesAKeyWhoseCodecThrows() async throws {
    struct Negative: Error {}
    try await withBrokerFixture { fixture in
      let (clientA, clientB) = (fixture.makeClient(), fixture.makeClient())
      let picky = await inProcess(clientA) {
        Shared(
          wrappedValue: 0,
          .broker(
            "picky", decode: { @Sendable in try JSONDecoder().decode(Int.self, from: $0) },
            encode: { @Sendable value in
              guard value >= 0 else { throw Negative() }
              return try JSONEncoder().encode(value)
            }))
      }
      let remote = await inProcess(clientB) { Shared(wrappedValue: 0, .broker("picky")) }
      try await clientA.waitUntilConnected()
      try await clientB.waitUntilConnected()
      // The observer turns every value it cannot send into one it can.
      let told = Mutex<[Int]>([])
      let fix = picky.publisher.sink { value in
        told.withLock { $0.append(value) }
        if value < 0 { picky.withLock { $0 = -$0 } }
      }
      await onThreads({
        for step in 1...500 { picky.withLock { $0 = step % 2 == 0 ? step : -step } }
      })
      let agreed = try await settle(clientA, clientB, watching: [picky.changes, remote.changes]) {
        remote.wrappedValue == picky.wrappedValue
      }
      #expect(agreed)
      #expect(picky.wrappedValue == 500)
      #expect(picky.saveError == nil)
      #expect(told.withLock { $0.last } == 500)
      fix.cancel()
      clientA.close()
      clientB.close()
    }
  }
}

/// Runs each body on a thread of its own (not the cooperative pool, which a hung body would
/// block) and returns when all have.
private func onThreads(_ bodies: (@Sendable () -> Void)...) async {
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

/// Waits until both clients have every write confirmed and `condition` holds: an observer
/// may still write after a confirmation, and an update may still be on its way, so it looks
/// again at every change of a value in `watched`.
private func settle(
  _ first: BrokerClient, _ second: BrokerClient, watching watched: [AnyPublisher<Void, Never>],
  until condition: () -> Bool
) async throws -> Bool {
  let (changes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
  let subscriptions = watched.map { $0.sink { continuation.yield() } }
  defer { for subscription in subscriptions { subscription.cancel() } }
  var next = changes.makeAsyncIterator()
  while true {
    try await first.waitUntilConfirmed(timeout: .seconds(20))
    try await second.waitUntilConfirmed(timeout: .seconds(20))
    if condition() { return true }
    await next.next()
  }
}

extension Shared {
  /// Every change of the value, as a publisher of nothing.
  var changes: AnyPublisher<Void, Never> { publisher.map { _ in () }.eraseToAnyPublisher() }
}
