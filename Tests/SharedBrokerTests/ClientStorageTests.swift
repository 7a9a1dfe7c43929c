import Foundation
import Logging
import OpenCombine
import Sharing
import Synchronization
import TestSupport
import Testing

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// The client's storage and its I/O thread's driver as their callers meet them, with a transport
/// that keeps what is sent: a mutation shows at once and stays pending, a burst of them wakes the
/// I/O thread once, and user code (mutations, rebased mutations, codecs, observers) runs under
/// no lock but its key's, so it may read and write shared values.
@Suite(.timeLimit(.minutes(1))) struct ClientStorageTests {
  let wakeCount = WakeCount()
  let storage: ClientStorage
  let driver: ClientDriver
  let transport = Transport()
  let start = Moment.now

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
    let brokers = BrokerList(given: ["test"])
    storage = ClientStorage(
      brokers: brokers, endpoint: "test", logger: Logger(label: "test"),
      wake: { wakes.count.withLock { $0 += 1 } })
    driver = ClientDriver(
      machine: ClientMachine(
        id: "client", brokers: brokers, heartbeat: .milliseconds(500), missedHeartbeats: 3,
        maxWritesInFlight: 32, now: .now),
      storage: storage)
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
    storage.reference(key: key, initialValue: initialValue, codec: codec) { [storage] slot in
      BrokerReference(key: key, initialValue: initialValue, slot: slot, storage: storage, client: nil)
    }
  }

  /// Brings `keys` in sync at version 1 with `values` (JSON), as the broker run "run" answers.
  func sync(_ keys: [(String, String)]) {
    driver.handle(
      .reply(.welcome(instance: "run", publisher: "inproc://p", maxValueSize: nil)), at: start,
      via: transport)
    driver.handle(.turn, at: start, via: transport)
    for (key, value) in keys {
      driver.handle(.published([.synced(key: key, client: "client")]), at: start, via: transport)
      driver.handle(
        .reply(
          .snapshot(key: key, version: 1, lastWrite: 0, value: Data(value.utf8), writes: [:])),
        at: start, via: transport)
    }
    driver.handle(.turn, at: start, via: transport)
  }

  @Test func aBurstOfMutationsWakesTheIOThreadOnceUntilItsTurn() {
    let count = reference("count", 0)
    // Adding the key woke the thread; its turn takes the key.
    #expect(wakes == 1)
    driver.handle(.turn, at: start, via: transport)
    transport.sent = []
    wakes = 0
    for _ in 0..<100 { count.withLock { $0 += 1 } }
    #expect(wakes == 1)
    #expect(count.value == 100)
    #expect(storage.unconfirmedWriteCount() == 100)

    driver.handle(.turn, at: start + .seconds(1), via: transport)
    // Not connected: the turn says HELLO and writes nothing; every mutation stays pending.
    #expect(transport.sent == [.hello(client: "client")])
    count.withLock { $0 += 1 }
    #expect(wakes == 2)
    #expect(storage.unconfirmedWriteCount() == 101)
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
    driver.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 1, value: Data("10".utf8))
      ]), at: start, via: transport)
    #expect(count.value == 11)
    // Once when recorded (0 + 5), once in the rebase (the value before it, 1, + 5).
    #expect(seen.withLock { $0 } == [5, 6])
    #expect(storage.unconfirmedWriteCount() == 1)
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
    driver.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 1, value: Data("10".utf8))
      ]), at: start, via: transport)
    #expect(count.value == 11)
    #expect(mirror.value == 11)
    #expect(storage.unconfirmedWriteCount(of: ["count"]) == 1)
    cancellable.cancel()
  }

  /// A mutation made while the I/O thread decodes another process's value (here from inside
  /// the codec, as another thread would at that moment) is included when the rebase installs
  /// its result, and observers are last told the value that includes both.
  @Test func aMutationMadeWhileARebaseDecodesIsIncluded() {
    let decoding = Mutex<(@Sendable () -> Void)?>(nil)
    let codec = BrokerCodec<Int>(
      decode: { data in
        decoding.withLock { $0 }?()
        return try JSONDecoder().decode(Int.self, from: data)
      },
      encode: { try JSONEncoder().encode($0) })
    let count = reference("count", 0, codec: codec)
    sync([("count", "0")])
    count.withLock { $0 += 1 }
    let told = Mutex<[Int]>([])
    let cancellable = count.publisher.sink { value in told.withLock { $0.append(value) } }
    decoding.withLock { $0 = { count.withLock { $0 += 100 } } }
    transport.sent = []
    driver.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 1, value: Data("10".utf8))
      ]), at: start, via: transport)
    decoding.withLock { $0 = nil }
    #expect(count.value == 111)
    #expect(told.withLock { $0.last } == 111)
    #expect(storage.unconfirmedWriteCount() == 2)
    // One write covers both (the rebase's turn sent it); the mail of the mutation made
    // meanwhile is no news to the machine.
    driver.handle(.turn, at: start, via: transport)
    let writes = transport.takeWrites()
    guard case .write(_, _, "count", 2, let value, nil, true)? = writes.first, writes.count == 1 else {
      Issue.record("expected one write of count on version 2, got \(writes)")
      return
    }
    #expect(value == Data("111".utf8))
    cancellable.cancel()
  }

  /// Threads mutate a key while the I/O thread, on a thread of its own, keeps installing other
  /// processes' values under them: every mutation stays in the value, none is applied twice,
  /// and observers are last told the value the key shows.
  @Test func mutationsRacingRebasesAreNeitherLostNorDoubled() async {
    let count = reference("count", 0)
    sync([("count", "0")])
    let told = Mutex(0)
    let cancellable = count.publisher.sink { value in told.withLock { $0 = value } }
    // The driver's one owner is the thread below until it ends, as the I/O thread is.
    nonisolated(unsafe) let driver = self.driver
    let (transport, start) = (self.transport, self.start)
    let writers = 2
    let mutations = 2_000
    let updates = 500
    let body: @Sendable () -> Void = {
      for _ in 0..<mutations { count.withLock { $0 += 1 } }
    }
    await onThreads(
      body, body,
      {
        for update in 1...updates {
          driver.handle(
            .published([
              .update(
                key: "count", version: UInt64(update + 1), client: "other",
                write: UInt64(update), value: Data("\(update * 1_000_000)".utf8))
            ]), at: start, via: transport)
          driver.handle(.turn, at: start, via: transport)
        }
      })
    driver.handle(.turn, at: start, via: transport)
    #expect(count.value == updates * 1_000_000 + writers * mutations)
    #expect(told.withLock { $0 } == count.value)
    #expect(storage.unconfirmedWriteCount() == writers * mutations)
    #expect(driver.machine.keys[0].local == KeyValue(count.value))
    cancellable.cancel()
  }

  /// A write the DEALER does not queue counts as a lost connection: the next PONG brings a
  /// new handshake and the key resyncs, instead of waiting forever for its answer.
  @Test func aWriteTheSocketRefusesResyncsTheKey() {
    let count = reference("count", 0)
    sync([("count", "0")])
    transport.refusesWrites = true
    count.withLock { $0 += 1 }
    driver.handle(.turn, at: start, via: transport)
    #expect(driver.machine.connection == .dropped)
    #expect(driver.machine.keys[0].phase == .idle)
    transport.refusesWrites = false
    transport.sent = []
    driver.handle(.reply(.pong(instance: "run", behind: [])), at: start, via: transport)
    #expect(transport.sent == [.hello(client: "client")])
    #expect(storage.unconfirmedWriteCount() == 1)
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
    driver.handle(
      .published([
        .update(key: "count", version: 2, client: "other", write: 1, value: Data("7".utf8))
      ]), at: start, via: transport)
    #expect(count.value == 1)
    #expect(count.loadError != nil)
    count.withLock { $0 += 1 }
    driver.handle(.turn, at: start, via: transport)
    #expect(transport.takeWrites().isEmpty)
    #expect(count.saveError != nil)
    #expect(count.value == 2)

    failing.withLock { $0 = false }
    driver.handle(.turn, at: start + .seconds(1), via: transport)
    let writes = transport.takeWrites()
    #expect(writes.count == 1)
    guard case .write(_, _, "count", 2, let value, nil, true)? = writes.first else {
      Issue.record("expected a write of count on version 2, got \(writes)")
      return
    }
    #expect(value == Data("2".utf8))
    #expect(storage.unconfirmedWriteCount() == 1)
  }
}
