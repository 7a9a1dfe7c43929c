import Foundation
@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer
import Testing

/// The broker machine on a shared store, driven synchronously through its cluster driver against
/// an in-memory store whose faults the tests choose: a commit that was stored but never
/// answered, one that may still apply late, a key another broker changed, a store that cannot
/// be reached, and commits that the tests answer one at a time.
@Suite struct ClusterStoreTests {
  /// One broker of a cluster: the real serving core and driver, with a clock of the test's and
  /// a transport that records what goes out.
  final class Broker {
    private let core: BrokerCore
    private let cluster: FakeCluster
    private let transport = Recorder()
    private(set) var now = Duration.seconds(1)

    init(_ cluster: FakeCluster, clientTimeout: Duration = .seconds(3600)) throws {
      self.cluster = cluster
      let run = "run-\(UUID().uuidString.prefix(8))"
      let driver = ClusterDriver(cluster: cluster, run: run)
      let loaded = try driver.loadAll()
      let machine = BrokerMachine(
        instance: cluster.instance, run: run, backend: .cluster,
        configuration: BrokerConfiguration(clientTimeout: clientTimeout, seedWindow: .zero),
        publisherEndpoint: "inproc://published", records: loaded.records, heard: loaded.heard,
        now: .zero)
      core = BrokerCore(
        machine: machine, backend: .cluster(driver), transport: transport, counted: { _ in },
        report: { _ in })
    }

    /// What `message` from connection `peer` makes the broker send: replies and publications.
    func send(_ message: BrokerMessage, from peer: String = "p") -> Sent {
      core.takeStoreEvents()
      core.receive(FrameBuffer(message.frames), from: Data(peer.utf8), at: now)
      return carryOut()
    }

    /// What the broker sends once `time` has passed.
    func wait(_ time: Duration) -> Sent {
      now += time
      core.tick(at: now)
      return carryOut()
    }

    /// What the broker sends once the store's answers that arrived are taken in.
    func takeAnswers() -> Sent {
      carryOut()
    }

    func write(
      _ client: String, _ write: UInt64, base: UInt64, _ value: String, after: UInt64? = nil,
      from peer: String = "p"
    ) -> BrokerMessage? {
      send(
        .write(client: client, write: write, key: "k", base: base, value: Data(value.utf8), after: after),
        from: peer
      ).reply
    }

    private func carryOut() -> Sent {
      // The store may answer during a round: its events are taken until none is left.
      while cluster.hasEvents { core.takeStoreEvents() }
      return transport.take()
    }
  }

  /// Records what the broker sends.
  final class Recorder: BrokerTransport {
    private var sent = Sent()

    func reply(_ message: BrokerMessage, to peer: Data) -> Int? {
      let frames = message.frames
      (try? BrokerMessage(frames: frames)).map { sent.replies.append($0) }
      return frames.byteCount
    }

    func publish(_ message: BrokerMessage) -> Int? {
      let frames = message.frames
      (try? BrokerMessage(published: frames)).map { sent.published.append($0) }
      return frames.byteCount
    }

    func take() -> Sent {
      defer { sent = Sent() }
      return sent
    }
  }

  struct Sent {
    var replies: [BrokerMessage] = []
    var published: [BrokerMessage] = []
    var reply: BrokerMessage? { replies.last }
  }

  /// A commit stored but never answered is sent again; finding its own record, the broker
  /// acknowledges it, and the write pipelined behind it, in order, each applied once.
  @Test func aCommitStoredButNotAnsweredIsAcknowledgedWhenSentAgain() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    #expect(broker.write("c", 1, base: 0, "1") == .ack(key: "k", write: 1, version: 1))

    cluster.nextCommit = .storeThenFail
    #expect(broker.write("c", 2, base: 1, "2") == nil)
    #expect(broker.write("c", 3, base: 2, "3", after: 2) == nil)
    // Heartbeats are answered meanwhile.
    guard case .pong? = broker.send(.ping(versions: [])).reply else {
      Issue.record("a heartbeat waited on the key's commit")
      return
    }
    #expect(broker.wait(.milliseconds(50)).replies.isEmpty)
    let sent = broker.wait(BrokerMachine.retryDelay)
    #expect(sent.replies == [.ack(key: "k", write: 2, version: 2), .ack(key: "k", write: 3, version: 3)])
    #expect(cluster.stored("k")?.entry.version == 3)
    #expect(cluster.stored("k")?.entry.value == Data("3".utf8))
  }

  /// A commit that went unanswered may still be in etcd's log; sent again, it compares the
  /// same revision, so whichever of the two gets there first applies, and the other cannot.
  @Test(arguments: [false, true])
  func aCommitThatMayApplyLateAppliesOnce(lateFirst: Bool) throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    #expect(broker.write("c", 1, base: 0, "1") == .ack(key: "k", write: 1, version: 1))
    cluster.nextCommit = .failThenApplyLate
    #expect(broker.write("c", 2, base: 1, "2") == nil)
    if lateFirst { #expect(cluster.applyLateCommit()) }
    #expect(broker.wait(BrokerMachine.retryDelay).reply == .ack(key: "k", write: 2, version: 2))
    #expect(cluster.applyLateCommit() == false)
    #expect(cluster.stored("k")?.entry.version == 2)
  }

  /// The etcd client retries a transaction on another member when the first one's answer is
  /// lost; the retry finds the key changed, by the first. The write is acknowledged, not
  /// rejected as "already applied": the client pipelined writes behind it, which go through.
  @Test func aWriteFoundAppliedByItsOwnRetryIsAcknowledged() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    cluster.nextCommit = .storeThenAnswerChanged
    #expect(broker.write("c", 1, base: 0, "1") == .ack(key: "k", write: 1, version: 1))
    #expect(broker.write("c", 2, base: 1, "2", after: 1) == .ack(key: "k", write: 2, version: 2))
  }

  /// Two brokers, one store: a write through the second, whose entry is stale, is decided on
  /// the stored entry, and a resend of a write applied through the first is found applied.
  @Test func writesThroughAnotherBrokerAreDecidedOnTheStoredEntry() throws {
    let cluster = FakeCluster()
    let first = try Broker(cluster)
    let second = try Broker(cluster)
    _ = first.send(.hello(client: "c"))
    _ = second.send(.hello(client: "c"))
    #expect(first.write("c", 5, base: 0, "5") == .ack(key: "k", write: 5, version: 1))

    // Moved to the second broker without the ACK: the resend is recognized, with the version
    // it made.
    let resend = second.send(.write(client: "c", write: 5, key: "k", base: 0, value: Data("5".utf8), after: nil))
    #expect(resend.reply == .ack(key: "k", write: 5, version: 1))
    // The second broker's subscribers hear of version 1 first.
    #expect(resend.published == [.update(key: "k", version: 1, client: "c", write: 5, value: Data("5".utf8))])
    #expect(second.write("c", 6, base: 1, "6", after: 5) == .ack(key: "k", write: 6, version: 2))
    // A resend whose version the entry no longer matches is "already applied".
    guard case .reject(_, 5, 2, 6, _, _)? = second.write("c", 5, base: 0, "5") else {
      Issue.record("an old resend was not answered as already applied")
      return
    }
    // And the first one decides the next write on version 2.
    guard case .reject(_, 7, 2, 6, _, _)? = first.write("c", 7, base: 1, "7") else {
      Issue.record("a stale base was not rejected through the first broker")
      return
    }
  }

  @Test func aBrokerCutFromItsStoreSaysSoToEveryRequest() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    cluster.available = false
    guard case .error(.unavailable, _, nil, nil)? = broker.send(.ping(versions: [])).reply,
      case .error(.unavailable, _, nil, nil)? = broker.send(.hello(client: "c")).reply,
      case .error(.unavailable, _, "k", 1)? = broker.write("c", 1, base: 0, "1"),
      case .error(.storage, _, "k", 0)? = broker.send(.get(client: "c", key: "k")).reply
    else {
      Issue.record("a broker without its store must say so and refuse")
      return
    }
    #expect(cluster.commits == 0)
    cluster.available = true
    #expect(broker.write("c", 2, base: 0, "1") == .ack(key: "k", write: 2, version: 1))
  }

  /// Writes to a key whose commit is out wait, and are then stored together with one commit;
  /// heartbeats, and other keys, are answered meanwhile.
  @Test func writesToABusyKeyAreStoredTogether() throws {
    let cluster = FakeCluster()
    cluster.holding = true
    let broker = try Broker(cluster)
    for client in ["a", "b", "c"] { _ = broker.send(.hello(client: client), from: client) }
    #expect(broker.send(.write(client: "a", write: 1, key: "k", base: 0, value: Data("a".utf8), after: nil), from: "a").replies.isEmpty)
    #expect(broker.send(.write(client: "b", write: 1, key: "k", base: 1, value: Data("b".utf8), after: nil), from: "b").replies.isEmpty)
    #expect(broker.send(.write(client: "c", write: 1, key: "k", base: 2, value: Data("c".utf8), after: nil), from: "c").replies.isEmpty)
    #expect(cluster.held == 1)
    guard case .pong? = broker.send(.ping(versions: []), from: "b").reply else {
      Issue.record("a heartbeat waited on another connection's commit")
      return
    }
    _ = broker.send(.get(client: "c", key: "j"), from: "c")
    #expect(cluster.held == 2)

    cluster.answer(0)
    #expect(broker.takeAnswers().replies == [.ack(key: "k", write: 1, version: 1)])
    // The two that waited go out as one commit.
    #expect(cluster.held == 2)
    cluster.answer(1)
    cluster.answer(0)
    let sent = broker.takeAnswers()
    #expect(sent.replies.prefix(2) == [.ack(key: "k", write: 1, version: 2), .ack(key: "k", write: 1, version: 3)])
    #expect(
      sent.published == [
        .update(key: "k", version: 2, client: "b", write: 1, value: Data("b".utf8)),
        .update(key: "k", version: 3, client: "c", write: 1, value: Data("c".utf8)),
      ])
    #expect(cluster.commits == 3)
    #expect(cluster.stored("k")?.entry.lastWrites == ["a": 1, "b": 1, "c": 1])
  }

  /// A key written by one short-lived client after another keeps the records of the clients
  /// that wrote it within the client timeout, not of every client that ever did.
  @Test func aClusterForgetsClientsThatStoppedWriting() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster, clientTimeout: .seconds(60))
    for index in 1...300 {
      let client = "short-lived-\(index)"
      _ = broker.send(.hello(client: client), from: client)
      let write = BrokerMessage.write(
        client: client, write: 1, key: "k", base: UInt64(index - 1), value: Data("\(index)".utf8),
        after: nil)
      #expect(broker.send(write, from: client).reply == .ack(key: "k", write: 1, version: UInt64(index)))
      _ = broker.wait(.seconds(1))
    }
    let entry = try #require(cluster.stored("k")?.entry)
    // The writers of the last 60 seconds (the timeout: no other broker's record holds the
    // forgetting back), the last one included.
    #expect(entry.lastWrites.count == 61)
    #expect(Set(entry.written?.keys ?? [:].keys) == Set(entry.lastWrites.keys))
    #expect(entry.recent?.allSatisfy { entry.lastWrites[$0.client] != nil } == true)
  }

  /// A client that went on talking to another broker of the cluster keeps its records in every
  /// key it wrote, however long ago it wrote them; once no broker has heard it for the timeout,
  /// as far as each broker's record reaches, they go.
  @Test func aClientHeardByAnotherBrokerKeepsItsRecords() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster, clientTimeout: .seconds(60))
    _ = broker.send(.hello(client: "c"), from: "c")
    _ = broker.send(.hello(client: "d"), from: "d")
    #expect(broker.write("c", 1, base: 0, "1", from: "c") == .ack(key: "k", write: 1, version: 1))
    for _ in 0..<10 {
      _ = broker.wait(.seconds(15))
      // Another broker's record of whom it heard, as its watch brings it.
      cluster.heard(["c": broker.now.milliseconds], asOf: broker.now.milliseconds, by: "other-broker")
      _ = broker.send(.ping(versions: []), from: "d")
    }
    #expect(broker.write("d", 1, base: 1, "2", from: "d") == .ack(key: "k", write: 1, version: 2))
    #expect(cluster.stored("k")?.entry.lastWrites["c"] == 1)

    // The other broker goes on recording, without "c".
    for _ in 0..<5 {
      _ = broker.wait(.seconds(15))
      cluster.heard([:], asOf: broker.now.milliseconds, by: "other-broker")
      _ = broker.send(.ping(versions: []), from: "d")
    }
    #expect(broker.write("d", 2, base: 2, "3", from: "d") == .ack(key: "k", write: 2, version: 3))
    #expect(cluster.stored("k")?.entry.lastWrites["c"] == nil)
    #expect(cluster.stored("k")?.entry.lastWrites["d"] == 2)
  }

  /// A broker that stops recording whom it heard (cut from the store, or dead) may have heard a
  /// client it could not record: the client's records stay until that broker's last record is
  /// two timeouts old.
  @Test func aBrokerThatStopsRecordingHoldsTheForgettingBack() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster, clientTimeout: .seconds(60))
    _ = broker.send(.hello(client: "c"), from: "c")
    _ = broker.send(.hello(client: "d"), from: "d")
    #expect(broker.write("c", 1, base: 0, "1", from: "c") == .ack(key: "k", write: 1, version: 1))
    cluster.heard(["c": broker.now.milliseconds], asOf: broker.now.milliseconds, by: "cut-broker")
    for _ in 0..<6 {
      _ = broker.wait(.seconds(15))
      _ = broker.send(.ping(versions: []), from: "d")
    }
    #expect(broker.write("d", 1, base: 1, "2", from: "d") == .ack(key: "k", write: 1, version: 2))
    #expect(cluster.stored("k")?.entry.lastWrites["c"] == 1)

    for _ in 0..<3 {
      _ = broker.wait(.seconds(15))
      _ = broker.send(.ping(versions: []), from: "d")
    }
    #expect(broker.write("d", 2, base: 2, "3", from: "d") == .ack(key: "k", write: 2, version: 3))
    #expect(cluster.stored("k")?.entry.lastWrites["c"] == nil)
  }

  /// A connection's answers keep the order of its requests, even when a later request's
  /// commit is answered first.
  @Test func answersKeepTheirConnectionsOrder() throws {
    let cluster = FakeCluster()
    cluster.holding = true
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    _ = broker.send(.write(client: "c", write: 1, key: "k", base: 0, value: Data("1".utf8), after: nil))
    _ = broker.send(.get(client: "c", key: "j"))
    cluster.answer(1)
    #expect(broker.takeAnswers().replies.isEmpty)
    cluster.answer(0)
    let replies = broker.takeAnswers().replies
    guard replies.count == 2, case .ack = replies[0], case .snapshot = replies[1] else {
      Issue.record("answers out of order: \(replies)")
      return
    }
  }
}

/// An in-memory shared store with etcd's compare-and-set on revisions, driven from the test's
/// thread only, whose next commit can be made to fail after, or before, being stored, and whose
/// commits can be held until the test answers them.
final class FakeCluster: BrokerCluster, @unchecked Sendable {
  enum Fault {
    /// Stores the record, then fails as a lost answer would.
    case storeThenFail
    /// Fails; the commit stays pending and may apply later (``applyLateCommit()``).
    case failThenApplyLate
    /// Stores the record, and answers as a retry on another member would: the key changed.
    case storeThenAnswerChanged
  }

  struct LostAnswer: Error {}

  let instance = "00000000000000001-fake"
  var available = true {
    didSet { if available != oldValue { events.append(.availability(available)) } }
  }
  var nextCommit: Fault?
  /// Whether commits wait for ``answer(_:)``.
  var holding = false
  private(set) var commits = 0
  private var records: [String: BrokerClusterRecord] = [:]
  private var revision: Int64 = 0
  private var late: (key: String, record: Data, expecting: Int64)?
  private var waiting: [(key: String, record: Data?, expecting: Int64, id: UInt64)] = []
  private var events: [BrokerClusterEvent] = []

  func setWake(_ wake: @escaping @Sendable () -> Void) {}
  func put(key: String, record: Data) {}
  func loadAll() throws -> [String: BrokerClusterRecord] { records }
  func close() {}

  var hasEvents: Bool { !events.isEmpty }

  /// Queues another broker's record of whom it heard from, made at `asOf`, as the watch would
  /// bring it.
  func heard(_ times: [String: Int64], asOf: Int64, by run: String) {
    revision += 1
    let record = BrokerClusterRecord(
      data: try! JSONEncoder().encode(HeardRecord(asOf: asOf, clients: times)), revision: revision)
    events.append(.changed([(ClusterDriver.heardPrefix + run, record)], followsHistory: true))
  }

  func takeEvents() -> [BrokerClusterEvent] {
    defer { events = [] }
    return events
  }

  /// Commits waiting for an answer.
  var held: Int { waiting.count }

  /// The record stored for `key`.
  func stored(_ key: String) -> ClusterRecord? {
    records[key].flatMap { try? ClusterRecord(decoding: $0.data) }
  }

  func commit(key: String, record: Data?, expecting revision: Int64, id: UInt64) {
    commits += 1
    if holding {
      waiting.append((key, record, revision, id))
      return
    }
    func completion(_ result: Result<BrokerClusterCommit, any Error>) {
      events.append(.committed(id: id, result))
    }
    if let record, let fault = nextCommit {
      nextCommit = nil
      switch fault {
      case .storeThenFail: _ = apply(key, record, expecting: revision)
      case .failThenApplyLate: late = (key, record, revision)
      case .storeThenAnswerChanged:
        _ = apply(key, record, expecting: revision)
        return completion(.success(.changed(records[key])))
      }
      return completion(.failure(LostAnswer()))
    }
    completion(.success(apply(key, record, expecting: revision)))
  }

  /// Stores (or not) the waiting commit at `index`, and answers it.
  func answer(_ index: Int) {
    let commit = waiting.remove(at: index)
    events.append(
      .committed(
        id: commit.id, .success(apply(commit.key, commit.record, expecting: commit.expecting))))
  }

  /// Lets the pending commit reach the store now; returns whether it applied.
  func applyLateCommit() -> Bool {
    guard let late, case .stored = apply(late.key, late.record, expecting: late.expecting) else { return false }
    self.late = nil
    return true
  }

  private func apply(_ key: String, _ record: Data?, expecting: Int64) -> BrokerClusterCommit {
    guard (records[key]?.revision ?? 0) == expecting else { return .changed(records[key]) }
    guard let record else { return .stored(revision: expecting) }
    revision += 1
    records[key] = BrokerClusterRecord(data: record, revision: revision)
    return .stored(revision: revision)
  }
}
