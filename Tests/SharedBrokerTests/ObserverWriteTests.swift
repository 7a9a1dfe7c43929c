import Foundation
import OpenCombine
import SharedBroker
import SharedBrokerTesting
import Sharing
import Synchronization
import TestSupport
import Testing

/// Observers that write shared values, from threads of their own, while other threads and
/// another client write the same keys: nothing hangs, loses or doubles a write.
@Suite struct ObserverWriteTests {
  /// `make chaos` runs the clamp `OBSERVER_CHECK_RUNS` times, each for
  /// `OBSERVER_CHECK_SECONDS` with a paced local writer; `make test` once, by write counts.
  @Test(.timeLimit(.minutes(5)))
  func anObserverClampsTheValueItObservesWhileItsProcessAndAnotherWriteIt() async throws {
    let environment = ProcessInfo.processInfo.environment
    let seconds = environment["OBSERVER_CHECK_SECONDS"].flatMap(Double.init)
    let runs = environment["OBSERVER_CHECK_RUNS"].flatMap(Int.init) ?? 1
    var writes = 0
    for _ in 0..<runs { writes += try await clamp(for: seconds.map { .seconds($0) }) }
    if let seconds {
      print(
        "chaos-row | an observer clamps from the client's I/O thread while a paced local writer "
          + "and a second client write the key | \(runs) runs × \(seconds) s | \(writes) writes, "
          + "each confirmed, none hung | 0 |")
    }
  }

  /// One run of the clamp: returns how many writes the writers made.
  private func clamp(for duration: Duration?) async throws -> Int {
    try await withBrokerFixture { fixture in
      let (clientA, clientB) = (fixture.makeClient(), fixture.makeClient())
      let a = await inProcess(clientA) { Shared(wrappedValue: 0, .broker("count")) }
      let b = await inProcess(clientB) { Shared(wrappedValue: 0, .broker("count")) }
      try await clientA.waitUntilConnected()
      try await clientB.waitUntilConnected()
      let clamps = Atomic(0)
      let writes = Atomic(0)
      let clamp = a.publisher.sink { value in
        guard value > 1_000 else { return }
        clamps.add(1, ordering: .relaxed)
        a.withLock { $0 = min($0, 1_000) }
      }
      let end = duration.map { ContinuousClock.now + $0 }
      /// Writes `count` times, or until `end` with a pause between writes when `paced`.
      @Sendable func write(_ shared: Shared<Int>, by step: Int, count: Int, paced: Bool) {
        var written = 0
        while end.map({ ContinuousClock.now < $0 }) ?? (written < count) {
          shared.withLock { $0 += step }
          written += 1
          if paced, end != nil { Thread.sleep(forTimeInterval: 0.000_2) }
        }
        writes.add(written, ordering: .relaxed)
      }
      await onThreads(
        { write(a, by: 7, count: 3_000, paced: true) },
        { write(b, by: 5, count: 3_000, paced: false) })
      let agreed = try await settle(clientA, clientB, watching: [a.changes, b.changes]) {
        a.wrappedValue == b.wrappedValue
      }
      #expect(agreed)
      #expect(a.wrappedValue <= 1_000)
      #expect(clamps.load(ordering: .relaxed) > 0)
      clamp.cancel()
      clientA.close()
      clientB.close()
      return writes.load(ordering: .relaxed)
    }
  }

  @Test(.timeLimit(.minutes(1))) func observersOfTwoKeysWriteEachOthersKeyBack() async throws {
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

  @Test(.timeLimit(.minutes(1)))
  func aMutationThatReadsTwoOtherKeysIsRebasedOnceForEachWrite() async throws {
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

  @Test(.timeLimit(.minutes(1))) func anObserverWritesAKeyWhoseCodecThrows() async throws {
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
