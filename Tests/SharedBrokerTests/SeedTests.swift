import Dependencies
import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Synchronization
import Testing

/// A broker restarted without its data: clients offer their copies (`SEED`) and the newest one
/// wins, whichever client comes back first; nothing a live client held is lost, and nothing spins.
@Suite(.timeLimit(.minutes(1)))
struct SeedTests {
  static let old = "00000000000000001-old"
  static let older = "00000000000000000-older"

  func seed(_ raw: RawClient, _ client: String, origin: String, version: UInt64, _ value: String)
    throws -> BrokerMessage?
  {
    try raw.request(
      .seed(
        client: client, key: "k", origin: origin, version: version, value: Data(value.utf8),
        writes: [:])
    )
  }

  /// Writes `1`, `2`, … `last` to "k" as `client`, each with its number as the write id.
  func writeOneTo(_ last: Int, _ raw: RawClient, as client: String) throws {
    for write in 1...last {
      _ = try raw.request(
        .write(
          client: client, write: UInt64(write), key: "k", base: UInt64(write - 1),
          value: Data("\(write)".utf8)))
    }
  }

  @Test(arguments: [false, true])
  func theNewestCopyWinsInEitherOrder(newestFirst: Bool) async throws {
    let fixture = try BrokerFixture(seedWindow: .seconds(3600))
    defer { fixture.shutdown() }
    let a = try RawClient(fixture.endpoint, hello: "a")
    let b = try RawClient(fixture.endpoint, hello: "b")
    let copies = [(a, "a", 4, "four"), (b, "b", 5, "five")]
    for (raw, client, version, value) in newestFirst ? copies.reversed() : copies {
      _ = try seed(raw, client, origin: Self.old, version: UInt64(version), value)
    }
    #expect(
      try a.request(.get(client: "a", key: "k"))
        == .snapshot(key: "k", version: newestFirst ? 1 : 2, lastWrite: 0, value: Data("five".utf8))
    )
    // A copy from an earlier instance loses even with a higher version; a later one wins.
    _ = try seed(a, "a", origin: Self.older, version: 99, "stale")
    let later = try seed(a, "a", origin: "00000000000000002-later", version: 1, "later")
    #expect(
      later
        == .snapshot(
          key: "k", version: newestFirst ? 2 : 3, lastWrite: 0, value: Data("later".utf8)))
    // While copies are collected, writes to the key wait, and say which write.
    let write = try b.request(
      .write(client: "b", write: 1, key: "k", base: 3, value: Data("x".utf8)))
    guard case .error(.seeding, _, "k", 1) = write else {
      Issue.record("expected a seeding error for write 1, got \(String(describing: write))")
      return
    }
    // A copy that claims this very instance cannot be a lost one.
    let instance = try #require(fixture.server?.instance)
    _ = try seed(a, "a", origin: instance, version: 50, "mine")
    #expect(try a.request(.get(client: "a", key: "k"))?.value == "later")
  }

  /// During the seed window a key with no copy yet has no known value: `GET` is asked to come
  /// back (the client does, at its next heartbeat), so a reader does not take "nothing" for
  /// the value the clients are about to bring back. A copy must have a version and write ids.
  @Test func aGetDuringTheWindowWaitsForCopies() async throws {
    let fixture = try BrokerFixture(seedWindow: .seconds(3600))
    defer { fixture.shutdown() }
    let a = try RawClient(fixture.endpoint, hello: "a")
    guard case .error(.seeding, _, "k", 0) = try a.request(.get(client: "a", key: "k")) else {
      Issue.record("expected a seeding error naming the key")
      return
    }
    _ = try seed(a, "a", origin: Self.old, version: 2, "two")
    #expect(try a.request(.get(client: "a", key: "k"))?.value == "two")
    for fields in [
      ["SEED", "a", "k", Self.old, "0", "zero"],
      ["SEED", "a", "k", Self.old, "3", "three", "b", "0"],
    ] {
      guard
        case .error(.badRequest, _, _, _) = try a.request(fields.map { Data($0.utf8) }).map({
          try BrokerMessage(frames: $0)
        })
      else {
        Issue.record("expected bad-request for \(fields)")
        continue
      }
    }
  }

  /// A copy bigger than the broker's value limit is not adopted, and answered like any refused
  /// one, so the client takes the broker's state instead of offering it forever.
  @Test func aCopyOverTheValueLimitIsAnsweredNotAdopted() async throws {
    let fixture = try BrokerFixture(maxValueSize: 4)
    defer { fixture.shutdown() }
    let a = try RawClient(fixture.endpoint, hello: "a")
    #expect(
      try seed(a, "a", origin: Self.old, version: 3, "too long")
        == .snapshot(key: "k", version: 0, lastWrite: 0, value: Data()))
    #expect(fixture.server?.statistics.oversized == 1)
  }

  @Test func onceWrittenAKeyTakesNoCopyButAnUnknownKeyStillDoes() async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let a = try RawClient(fixture.endpoint, hello: "a")
    #expect(
      try a.request(.write(client: "a", write: 1, key: "k", base: 0, value: Data("new".utf8)))
        == .ack(key: "k", write: 1, version: 1))
    #expect(
      try seed(a, "a", origin: Self.old, version: 9, "old")
        == .snapshot(key: "k", version: 1, lastWrite: 1, value: Data("new".utf8), writes: ["a": 1]))
    let other = try a.request(
      .seed(
        client: "a", key: "other", origin: Self.old, version: 3, value: Data("kept".utf8),
        writes: [:])
    )
    #expect(other == .snapshot(key: "other", version: 1, lastWrite: 0, value: Data("kept".utf8)))
    #expect(fixture.server?.statistics.seedsAdopted == 1)
  }

  /// A broker with `--data` that was replaced for a while by one without (whose run went on
  /// counting) comes back: its data is older than the clients' copies from that run, which win;
  /// a copy from the run that wrote the data does not.
  @Test(arguments: [false, true])
  func aCopyFromALaterRunBeatsLoadedData(writtenFirst: Bool) async throws {
    let fixture = try BrokerFixture(persistent: true)
    defer { fixture.shutdown() }
    let dataRun = try #require(fixture.server?.instance)
    try writeOneTo(4, RawClient(fixture.endpoint, hello: "a"), as: "a")
    try fixture.restart()
    let b = try RawClient(fixture.endpoint, hello: "b")
    #expect(try seed(b, "b", origin: dataRun, version: 3, "3")?.value == "4")
    if writtenFirst {
      #expect(
        try b.request(.write(client: "b", write: 1, key: "k", base: 4, value: Data("5".utf8)))
          == .ack(key: "k", write: 1, version: 5))
    }
    // The run in between started after the data's run and before this one.
    let answer = try seed(b, "b", origin: dataRun + "~", version: 11, "11")
    #expect(answer?.value == (writtenFirst ? "5" : "11"))
    #expect(fixture.server?.statistics.seedsAdopted == (writtenFirst ? 0 : 1))
  }

  /// An idle client's copy, confirmed by a run in which nothing was written, holds the very
  /// data the next run loads: that run keeps its version (versions count writes), and only a
  /// copy holding another value is adopted.
  @Test func anIdenticalCopyFromARunThatWroteNothingIsNotAdopted() async throws {
    let fixture = try BrokerFixture(persistent: true)
    defer { fixture.shutdown() }
    try writeOneTo(2, RawClient(fixture.endpoint, hello: "a"), as: "a")
    try fixture.restart()
    let idleRun = try #require(fixture.server?.instance)
    try fixture.restart()
    let b = try RawClient(fixture.endpoint, hello: "b")
    let same = try b.request(
      .seed(
        client: "b", key: "k", origin: idleRun, version: 2, value: Data("2".utf8),
        writes: ["a": 2]))
    #expect(
      same == .snapshot(key: "k", version: 2, lastWrite: 0, value: Data("2".utf8), writes: ["a": 2]))
    #expect(fixture.server?.statistics.seedsAdopted == 0)
    let other = try seed(b, "b", origin: idleRun, version: 2, "other")
    #expect(
      other
        == .snapshot(key: "k", version: 3, lastWrite: 0, value: Data("other".utf8), writes: ["a": 2]))
    #expect(fixture.server?.statistics.seedsAdopted == 1)
  }

  /// A copy says which writes it holds: a client whose write the lost broker applied (but whose
  /// ACK never came) learns it from the new broker and does not apply it again.
  @Test func aCopyCarriesTheWritesItHolds() async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let reader = try RawClient(fixture.endpoint, hello: "reader")
    let writer = try RawClient(fixture.endpoint, hello: "writer")
    _ = try reader.request(
      .seed(
        client: "reader", key: "k", origin: Self.old, version: 7, value: Data("7".utf8),
        writes: ["writer": 12])
    )
    #expect(
      try writer.request(.get(client: "writer", key: "k"))
        == .snapshot(
          key: "k", version: 1, lastWrite: 12, value: Data("7".utf8), writes: ["writer": 12]))
    let resent = try writer.request(
      .write(client: "writer", write: 12, key: "k", base: 1, value: Data("8".utf8)))
    #expect(
      resent == .reject(key: "k", write: 12, version: 1, lastWrite: 12, value: Data("7".utf8)))
  }

  /// The programs' case: a counter with taps pending and an idle profile, both at 5, and the
  /// broker restarted with nothing. Both end at the broker's value with every tap, a newcomer
  /// reads it, and afterwards the broker only answers heartbeats.
  @Test func aMemoryOnlyRestartLosesNoTapAndNothingSpins() async throws {
    let fixture = try BrokerFixture(seedWindow: .milliseconds(500))
    defer { fixture.shutdown() }
    let writer = fixture.makeClient()
    let reader = fixture.makeClient()
    let written = await inProcess(writer) { Shared(wrappedValue: Stats(), .broker("stats")) }
    let read = await inProcess(reader) { Shared(wrappedValue: Stats(), .broker("stats")) }
    try await writer.waitUntilConnected()
    try await reader.waitUntilConnected()
    for _ in 0..<5 { written.withLock { $0.count += 1 } }
    try await writer.waitUntilConfirmed()
    let readerValues = read.values
    #expect(await firstValue(in: readerValues) { $0.count == 5 }?.count == 5)

    fixture.stop()
    for _ in 0..<3 { written.withLock { $0.count += 1 } }
    try fixture.restart()
    try await writer.waitUntilConfirmed()
    #expect(written.wrappedValue.count == 8)
    #expect(await firstValue(in: readerValues) { $0.count == 8 }?.count == 8)

    let newcomer = fixture.makeClient()
    let fresh = await inProcess(newcomer) { Shared(wrappedValue: Stats(), .broker("stats")) }
    try await newcomer.waitUntilConnected()
    #expect(fresh.wrappedValue.count == 8)
    // And the newcomer's write reaches the old clients.
    fresh.withLock { $0.count += 1 }
    try await newcomer.waitUntilConfirmed()
    #expect(await firstValue(in: readerValues) { $0.count == 9 }?.count == 9)
    #expect(await firstValue(in: written.values) { $0.count == 9 }?.count == 9)

    // Ten heartbeats (100 ms each) of three idle clients: at most one ping per heartbeat each,
    // no write or rejection, and nothing else but what a reconnect sends (a client starved past
    // its silence limit on a loaded machine says HELLO and syncs again; a spin sends hundreds).
    let before = try #require(fixture.server?.statistics)
    let start = ContinuousClock.now
    try await Task.sleep(for: .seconds(1))  // a window to count requests in, not a wait for work
    let after = try #require(fixture.server?.statistics)
    let heartbeats = Int((ContinuousClock.now - start) / .milliseconds(100)) + 2
    #expect(after.writes == before.writes)
    #expect(after.writesApplied == before.writesApplied)
    #expect(after.writesRejected == before.writesRejected)
    #expect(after.pings - before.pings <= 3 * heartbeats, "\(after.pings - before.pings) pings")
    let others = (after.requests - after.pings) - (before.requests - before.pings)
    let reconnects = after.hellos - before.hellos
    #expect(others <= reconnects * 4, "\(others) requests besides pings, \(reconnects) HELLOs")
  }
}

/// The client's side, against a scripted broker: what it sends a new instance, and what it
/// does with the answers.
@Suite(.timeLimit(.minutes(1)))
struct SeedingClientTests {
  /// A broker that answers as instance `instance`; `GET` gets `snapshot`, `SEED` gets `seeded`,
  /// writes stay unanswered unless `answerWrites` says otherwise.
  final class Script: Sendable {
    struct State {
      var instance = "one"
      var snapshot = BrokerMessage.snapshot(
        key: "count", version: 5, lastWrite: 0, value: Data("5".utf8))
      var seeded = BrokerMessage.snapshot(
        key: "count", version: 2, lastWrite: 0, value: Data("20".utf8))
      var answerWrites: (BrokerMessage) -> [BrokerMessage] = { _ in [] }
    }
    let state = Mutex(State())
    let publisher = Mutex("")

    func handle(_ request: BrokerMessage) -> [BrokerMessage] {
      state.withLock { state in
        switch request {
        case .hello: [.welcome(instance: state.instance, publisher: publisher.withLock { $0 })]
        case .ping: [.pong(instance: state.instance)]
        case .sync(let client, let key): [.synced(key: key, client: client)]
        case .get: [state.snapshot]
        case .seed: [state.seeded]
        case .write: state.answerWrites(request)
        default: []
        }
      }
    }
  }

  /// A client that was away while the broker restarted without data, and came back after
  /// others wrote the key anew: it offers its copy, takes the broker's lower version as it is,
  /// and puts its pending tap on top of that.
  @Test func aClientBackFromAwayTakesTheNewInstancesValueAndKeepsItsTap() async throws {
    try await withClient(of: Script()) { script, broker, client, count in
      #expect(count.wrappedValue == 5)

      var requests = broker.requestStream.makeAsyncIterator()
      count.withLock { $0 += 1 }
      // The new run holds what it seeded: a GET the client makes meanwhile (a resync) gets
      // that, not the first run's value.
      script.state.withLock {
        $0.instance = "two"
        $0.snapshot = $0.seeded
      }
      var offered: BrokerMessage?
      var rewritten: BrokerMessage?
      while rewritten == nil, let request = await requests.next() {
        switch request {
        case .seed: offered = request
        case .write(_, _, _, let base, _, _, _) where base == 2: rewritten = request
        default: break
        }
      }
      #expect(
        offered
          == .seed(
            client: client.id, key: "count", origin: "one", version: 5, value: Data("5".utf8),
            writes: [:]))
      guard case .write(_, _, _, _, let value, let after, _) = rewritten else { return }
      #expect(String(decoding: value, as: UTF8.self) == "21")
      #expect(after == nil)
      #expect(count.wrappedValue == 21)
    }
  }

  /// A request on a connection the broker does not know (`ERROR hello`): the client says HELLO
  /// again, resyncs, and sends its write again.
  @Test func anUnknownConnectionHandshakesAgainAndResends() async throws {
    let script = Script()
    script.state.withLock { state in
      state.answerWrites = { request in
        guard case .write(_, let write, let key, _, _, _, _) = request else { return [] }
        return [.error(code: .helloFirst, message: "say HELLO first", key: key, write: write)]
      }
    }
    try await withClient(of: script) { script, broker, client, count in
      var requests = broker.requestStream.makeAsyncIterator()
      script.state.withLock { state in
        let refused = state.answerWrites
        var first = true
        state.answerWrites = { request in
          defer { first = false }
          guard !first, case .write(_, let write, let key, let base, _, _, _) = request else {
            return refused(request)
          }
          return [.ack(key: key, write: write, version: base + 1)]
        }
      }
      count.withLock { $0 += 1 }
      var seen: [String] = []
      while let request = await requests.next() {
        switch request {
        case .hello: seen.append("HELLO")
        case .write: seen.append("WRITE")
        case .get: seen.append("GET")
        default: continue
        }
        if seen.filter({ $0 == "WRITE" }).count == 2 { break }
      }
      // From the refused write on (the stream also holds the first handshake), HELLO retried
      // until WELCOME counts once.
      let sequence = seen.drop { $0 != "WRITE" }.reduce(into: [String]()) { sequence, request in
        if sequence.last != request { sequence.append(request) }
      }
      #expect(sequence == ["WRITE", "HELLO", "GET", "WRITE"])
      try await client.waitUntilConfirmed()
      #expect(count.wrappedValue == 6)
    }
  }

  /// Runs `body` with a client of a broker playing `script`, synced to its key `count`.
  func withClient(
    of script: Script,
    _ body: (Script, FakeBroker, BrokerClient, Shared<Int>) async throws -> Void
  ) async throws {
    let broker = try FakeBroker { script.handle($0) }
    script.publisher.withLock { $0 = broker.publisherEndpoint }
    defer { broker.stop() }
    let client = BrokerClient(
      endpoint: broker.endpoint, configuration: .init(heartbeatInterval: .milliseconds(50)))
    defer { client.close() }
    let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
    try await client.waitUntilConnected()
    try await body(script, broker, client, count)
  }
}

extension BrokerMessage {
  /// A snapshot's value as text.
  var value: String? {
    if case .snapshot(_, _, _, let value, _) = self {
      String(decoding: value, as: UTF8.self)
    } else {
      nil
    }
  }
}
