import Dispatch
import Foundation
import Sharing
import Testing

@Suite struct SharedTests {
  @Test func copiesShareOneReference() {
    let shared = Shared(value: Stats())
    let copy = shared
    copy.withLock { $0.count = 5 }
    #expect(shared.wrappedValue.count == 5)
    shared.wrappedValue.name = "set"
    #expect(copy.wrappedValue.name == "set")
  }

  @Test func derivedSharedWritesThroughToItsParent() {
    let stats = Shared(value: Stats())
    let count: Shared<Int> = stats.count
    count.withLock { $0 += 3 }
    #expect(stats.wrappedValue.count == 3)
    stats.withLock { $0.count = 10 }
    #expect(count.wrappedValue == 10)
  }

  @Test func withLockIsAtomicAcrossThreads() {
    let shared = Shared(value: 0)
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      for _ in 0..<1_000 { shared.withLock { $0 += 1 } }
    }
    #expect(shared.wrappedValue == 8_000)
  }

  @Test func readerFollowsButCannotWrite() {
    let shared = Shared(value: Stats(count: 1))
    let reader = shared.reader
    let derived: SharedReader<Int> = reader.count
    shared.withLock { $0.count = 2 }
    #expect(reader.wrappedValue.count == 2)
    #expect(derived.wrappedValue == 2)
    #expect(SharedReader(shared) == reader)
  }

  @Test func publisherEmitsCurrentValueThenChanges() {
    let shared = Shared(value: 1)
    var received: [Int] = []
    let cancellable = shared.publisher.sink { received.append($0) }
    shared.withLock { $0 = 2 }
    shared.wrappedValue = 3
    #expect(received == [1, 2, 3])
    cancellable.cancel()
    shared.wrappedValue = 4
    #expect(received == [1, 2, 3])
  }

  /// The publisher is made when first asked for: it still starts with the latest value, and
  /// every publisher asked for later hears the same changes.
  @Test func aPublisherAskedForAfterWritesStartsWithTheLatestValue() {
    let shared = Shared(value: 1)
    shared.withLock { $0 = 2 }
    shared.wrappedValue = 3
    var first: [Int] = []
    var second: [Int] = []
    let firstCancellable = shared.publisher.sink { first.append($0) }
    shared.wrappedValue = 4
    let secondCancellable = shared.publisher.sink { second.append($0) }
    shared.withLock { $0 = 5 }
    #expect(first == [3, 4, 5])
    #expect(second == [4, 5])
    firstCancellable.cancel()
    secondCancellable.cancel()
  }

  @Test func valuesStream() async {
    let shared = Shared(value: 0)
    let stream = shared.values
    Task { shared.withLock { $0 = 42 } }
    #expect(await firstValue(in: stream) { $0 == 42 } == 42)
  }

  @Test func equalityComparesValues() {
    #expect(Shared(value: 1) == Shared(value: 1))
    #expect(Shared(value: 1) != Shared(value: 2))
  }

  @Test func runawayObserverIsReportedNotRecursedForever() {
    let shared = Shared(value: 0)
    var cancellable: AnyCancellable?
    withKnownIssue {
      cancellable = shared.publisher.sink { value in shared.withLock { $0 = value + 1 } }
    } matching: { $0.description.contains("Feedback loop detected") }
    #expect(shared.wrappedValue > 0)
    cancellable?.cancel()
  }
}
