import Foundation
import Logging
import OpenCombine
import Sharing
import Synchronization
import Testing

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// The client's storage as its callers meet it, with a transport that keeps what is sent: a
/// mutation shows at once and stays pending, a burst of them wakes the I/O thread once, and user
/// code (mutations, rebased mutations, codecs, observers) runs under no lock of the storage, so
/// it may read and write shared values.
@Suite(.timeLimit(.minutes(1))) struct ClientStorageTests {
  let wakeCount = WakeCount()
  let storage: ClientStorage
  let transport = Transport()
  let start = ContinuousClock.now

  /// How often the storage woke the I/O thread.
  final class WakeCount: Sendable {
    let count = Mutex(0)
  }

  var wakes: Int {
    get { wakeCount.count.withLock { $0 } }
    nonmutating set { wakeCount.count.withLock { $0 = newValue } }
  }

  init() {
    let wakes = wakeCount
    storage = ClientStorage(
      machine: ClientMachine(
        id: "client", brokers: BrokerList(given: ["test"]), heartbeat: .milliseconds(500),
        missedHeartbeats: 3, maxWritesInFlight: 32, now: .now),
      endpoint: "test", logger: Logger(label: "test"), wake: { wakes.count.withLock { $0 += 1 } })
  }

  /// Keeps what the storage sends.
  final class Transport: ClientTransport, @unchecked Sendable {
    var sent: [BrokerMessage] = []
    /// Refuses writes, as a DEALER at its high-water mark does.
    var refusesWrites = false
    func send(_ message: BrokerMessage) -> Bool {
      if refusesWrites, case .write = message { return false }
      sent.append(message)
      return true
    }
    func subscribe(to key: String) {}
    func connectDealer(to endpoint: String, from old: String) {}
    func connectSubscriber(to endpoint: String, from old: String?) -> Bool { true }
    func disconnectSubscriber(from endpoint: String) {}

    /// Takes the writes sent since the last call.
    func takeWrites() -> [BrokerMessage] {
      defer { sent = [] }
      return sent.filter { if case .write = $0 { true } else { false } }
    }
  }

  func reference<Value: Codable & Sendable & Equatable>(
    _ key: String, _ initialValue: Value, codec: BrokerCodec<Value> = .json
  ) -> BrokerReference<Value> {
    storage.reference(key: key, initialValue: initialValue, codec: codec) { [storage] index in
      BrokerReference(
        key: key, index: index, initialValue: initialValue, storage: storage, client: nil)
    }
  }

  /// Brings `keys` in sync at version 1 with `values` (JSON), as the broker run "run" answers.
  func sync(_ keys: [(String, String)]) {
    storage.handle(
      .reply(.welcome(instance: "run", publisher: "inproc://p", maxValueSize: nil)), at: start,
      via: transport)
    storage.handle(.turn, at: start, via: transport)
    for (key, value) in keys {
      storage.handle(.published([.synced(key: key, client: "client")]), at: start, via: transport)
      storage.handle(
        .reply(
          .snapshot(key: key, version: 1, lastWrite: 0, value: Data(value.utf8), writes: [:])),
        at: start, via: transport)
    }
    storage.handle(.turn, at: start, via: transport)
  }

  @Test func aBurstOfMutationsWakesTheIOThreadOnceUntilItsTurn() {
    let count = reference("count", 0)
    // Adding the key woke the thread; its turn takes the key.
    #expect(wakes == 1)
    storage.handle(.turn, at: start, via: transport)
    transport.sent = []
    wakes = 0
    for _ in 0..<100 { count.withLock { $0 += 1 } }
    #expect(wakes == 1)
    #expect(count.value == 100)
    #expect(storage.unconfirmedWriteCount == 100)

    storage.handle(.turn, at: start + .seconds(1), via: transport)
    // Not connected: the turn says HELLO and writes nothing; every mutation stays pending.
    #expect(transport.sent == [.hello(client: "client")])
    count.withLock { $0 += 1 }
    #expect(wakes == 2)
    #expect(storage.unconfirmedWriteCount == 101)
  }

  @Test func aReadingHasTheValueAndItsErrorsAtOnce() {
    let count = reference("count", 0)
    count.withLock { $0 = 7 }
    let reading = count.reading
    #expect(reading.value == 7)
    #expect(reading.isLoading)
    #expect(reading.loadError == nil)
    #expect(reading.saveError == nil)
  }

  @Test func aMutationMayReadSharedValuesItsOwnIncluded() {
    let (count, total) = (reference("count", 0), reference("total", 0))
    count.withLock { $0 = 3 }
    let read = total.withLock { value in
      value = count.value + total.value + 1
      return value
    }
    #expect(read == 4)
    #expect(total.value == 4)
  }

  /// A rebase re-runs pending mutations on another process's newer value with no lock held: one
  /// that reads another key and its own key sees the values before the rebase, and none is lost.
  @Test func aRebasedMutationMayReadAnotherKeyAndItsOwn() {
    let (count, other) = (reference("count", 0), reference("other", 0))
    sync([("count", "0"), ("other", "5")])
    let seen = Mutex<[Int]>([])
    count.withLock { value in
      seen.withLock { $0.append(count.value + other.value) }
      value += 1
    }
    #expect(count.value == 1)
    storage.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 1, value: Data("10".utf8))
      ]), at: start, via: transport)
    #expect(count.value == 11)
    // Once when recorded (0 + 5), once in the rebase (the value before it, 1, + 5).
    #expect(seen.withLock { $0 } == [5, 6])
    #expect(storage.unconfirmedWriteCount == 1)
  }

  /// An observer that writes a key (another, and its own once) on the I/O thread's
  /// notification: no deadlock, and both writes count.
  @Test func anObserverMayWriteKeys() {
    let (count, mirror) = (reference("count", 0), reference("mirror", 0))
    sync([("count", "0"), ("mirror", "0")])
    let cancellable = count.publisher.dropFirst().sink { value in
      mirror.withLock { $0 = value }
      if value == 10 { count.withLock { $0 += 1 } }
    }
    storage.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 1, value: Data("10".utf8))
      ]), at: start, via: transport)
    #expect(count.value == 11)
    #expect(mirror.value == 11)
    #expect(storage.machine.keys[0].unconfirmedWriteCount == 1)
    cancellable.cancel()
  }

  /// Updates that keep arriving while a rebase decodes make it give up (its result is stale
  /// each time), and the rebases asked for meanwhile are skipped (one runs already). The last
  /// value must still reach the observers without anyone reading the key: a screen showed an
  /// older count until the next tap.
  @Test func aRebaseOvertakenByNewerValuesIsFinishedAndTold() {
    let injected = Mutex(0)
    let storage = self.storage
    let transport = self.transport
    let start = self.start
    // Each decode lets another update in first, as the I/O thread would while another
    // thread decodes; three times, then the burst is over.
    let codec = BrokerCodec<Int>(
      decode: { data in
        let next = injected.withLock { count -> Int? in
          guard count < 3 else { return nil }
          count += 1
          return count + 2
        }
        if let next {
          storage.handle(
            .published([
              .update(
                key: "count", version: UInt64(next), client: "other", write: UInt64(next),
                value: Data("\(next)".utf8))
            ]), at: start, via: transport)
        }
        return try JSONDecoder().decode(Int.self, from: data)
      },
      encode: { try JSONEncoder().encode($0) })
    let count = reference("count", 0, codec: codec)
    sync([("count", "0")])
    injected.withLock { $0 = 0 }
    let told = Mutex<[Int]>([])
    let cancellable = count.publisher.sink { value in told.withLock { $0.append(value) } }
    storage.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 2, value: Data("2".utf8))
      ]), at: start, via: transport)
    #expect(injected.withLock { $0 } == 3)
    #expect(told.withLock { $0.last } == 5)
    #expect(storage.machine.keys[0].needsRebase == false)
    #expect(count.value == 5)
    cancellable.cancel()
  }

  /// A write the DEALER does not queue counts as a lost connection: the next PONG brings a
  /// new handshake and the key resyncs, instead of waiting forever for its answer.
  @Test func aWriteTheSocketRefusesResyncsTheKey() {
    let count = reference("count", 0)
    sync([("count", "0")])
    transport.refusesWrites = true
    count.withLock { $0 += 1 }
    storage.handle(.turn, at: start, via: transport)
    #expect(storage.machine.connection == .dropped)
    #expect(storage.machine.keys[0].phase == .idle)
    transport.refusesWrites = false
    transport.sent = []
    storage.handle(.reply(.pong(instance: "run", behind: [])), at: start, via: transport)
    #expect(transport.sent == [.hello(client: "client")])
    #expect(storage.unconfirmedWriteCount == 1)
  }

  /// A codec that throws, decoding and encoding: the errors show, the last good value stays,
  /// and the mutations stay pending, none lost.
  @Test func aCodecThatThrowsLosesNothing() throws {
    struct Refused: Error {}
    let failing = Mutex(false)
    let codec = BrokerCodec<Int>(
      decode: { data in
        if failing.withLock({ $0 }) { throw Refused() }
        return try JSONDecoder().decode(Int.self, from: data)
      },
      encode: { value in
        if failing.withLock({ $0 }) { throw Refused() }
        return try JSONEncoder().encode(value)
      })
    let count = reference("count", 0, codec: codec)
    sync([("count", "1")])
    #expect(count.value == 1)
    failing.withLock { $0 = true }
    storage.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 1, value: Data("7".utf8))
      ]), at: start, via: transport)
    #expect(count.value == 1)
    #expect(count.loadError != nil)
    count.withLock { $0 += 1 }
    storage.handle(.turn, at: start, via: transport)
    #expect(transport.takeWrites().isEmpty)
    #expect(count.saveError != nil)
    #expect(count.value == 2)

    failing.withLock { $0 = false }
    storage.handle(.turn, at: start + .seconds(1), via: transport)
    let writes = transport.takeWrites()
    #expect(writes.count == 1)
    guard case .write(_, _, "count", 2, let value, nil)? = writes.first else {
      Issue.record("expected a write of count on version 2, got \(writes)")
      return
    }
    #expect(value == Data("2".utf8))
    #expect(storage.unconfirmedWriteCount == 1)
  }
}
