import Foundation
import Testing

@testable import SharedBrokerServer

/// The broker's machine alone, as `ClientMachineTests` tests the client's: events in, actions
/// out, in order. No sockets, log or store: the tests answer its commits themselves.
@Suite struct BrokerMachineTests {
  /// An action, with what a test compares of it.
  enum Out: Equatable, CustomStringConvertible {
    case reply(String, BrokerMessage)
    case publish(BrokerMessage)
    /// A commit of the key at the revision, with the values it stores (the log's records, or
    /// the cluster record's value).
    case commit(key: String, revision: Int64, values: [String])
    case report(String)
    case recordHeard([String])
    case removeHeard(String)

    init(_ action: BrokerMachine.Action) {
      switch action {
      case .reply(let peer, let message):
        self = .reply(String(decoding: peer, as: UTF8.self), message)
      case .publish(let message): self = .publish(message)
      case .commit(let commit):
        let values =
          commit.log.isEmpty
          ? commit.record.map { [String(decoding: $0.entry.value, as: UTF8.self)] } ?? []
          : commit.log.map { String(decoding: $0.value, as: UTF8.self) }
        self = .commit(key: commit.key, revision: commit.revision, values: values)
      case .report(let report): self = .report("\(report)".prefix { $0 != "(" }.description)
      case .recordHeard(let record): self = .recordHeard(record.clients.keys.sorted())
      case .removeHeard(let run): self = .removeHeard(run)
      }
    }

    var description: String {
      switch self {
      case .reply(let peer, let message): "reply \(peer) \(message)"
      case .publish(let message): "publish \(message)"
      case .commit(let key, let revision, let values): "commit \(key)@\(revision) \(values)"
      case .report(let report): "report \(report)"
      case .recordHeard(let clients): "recordHeard \(clients)"
      case .removeHeard(let run): "removeHeard \(run)"
      }
    }
  }

  /// A machine, the time, and the tokens of the commits it asked for, oldest first.
  struct Harness {
    var machine: BrokerMachine
    var now = Duration.seconds(1)
    var commits: [UInt64] = []

    init(backend: BrokerMachine.Backend = .log, timeout: Duration = .seconds(10)) {
      machine = BrokerMachine(
        instance: "i1", run: "r1", backend: backend,
        configuration: BrokerConfiguration(
          maxValueSize: 16, clientTimeout: timeout, seedWindow: .zero),
        publisherEndpoint: "tcp://broker:5556", now: .zero, startedAt: 1_000_000)
    }

    mutating func take(_ actions: [BrokerMachine.Action]) -> [Out] {
      for case .commit(let commit) in actions { commits.append(commit.token) }
      return actions.map(Out.init)
    }

    mutating func send(_ message: BrokerMessage, from peer: String = "p") -> [Out] {
      take(machine.receive(FrameBuffer(message.frames), from: Data(peer.utf8), at: now))
    }

    mutating func sendRaw(_ frames: [String], from peer: String = "p") -> [Out] {
      take(machine.receive(FrameBuffer(frames.map { Data($0.utf8) }), from: Data(peer.utf8), at: now))
    }

    /// Answers the oldest commit in flight.
    mutating func answer(_ outcome: BrokerMachine.CommitOutcome) -> [Out] {
      take(machine.committed(commits.removeFirst(), outcome))
    }

    mutating func wait(_ time: Duration) -> [Out] {
      now += time
      return take(machine.tick(at: now))
    }

    mutating func hello(_ client: String, from peer: String) {
      _ = send(.hello(client: client), from: peer)
    }
  }

  static let welcome = BrokerMessage.welcome(
    instance: "i1", publisher: "tcp://broker:5556", maxValueSize: 16)

  static func write(
    _ client: String, _ write: UInt64, base: UInt64, _ value: String, key: String = "k",
    quiet: Bool = false
  ) -> BrokerMessage {
    .write(
      client: client, write: write, key: key, base: base, value: Data(value.utf8), after: nil,
      quiet: quiet)
  }

  static func update(_ version: UInt64, _ client: String, _ write: UInt64, _ value: String)
    -> BrokerMessage
  {
    .update(key: "k", version: version, client: client, write: write, value: Data(value.utf8))
  }

  // MARK: - Connections

  @Test func aClusterBrokerNamesItsBrokersInWelcomeAndAnnouncesChanges() {
    var broker = Harness(backend: .cluster)
    #expect(broker.take(broker.machine.setMembers(["tcp://a:5555", "tcp://b:5555"])) == [
      .publish(.brokers(["tcp://a:5555", "tcp://b:5555"]))
    ])
    #expect(broker.take(broker.machine.setMembers(["tcp://a:5555", "tcp://b:5555"])) == [])
    #expect(
      broker.send(.hello(client: "a")) == [
        .reply(
          "p",
          .welcome(
            instance: "i1", publisher: "tcp://broker:5556", maxValueSize: 16,
            brokers: ["tcp://a:5555", "tcp://b:5555"]))
      ])
    // One left: the clients hear of it at once.
    #expect(broker.take(broker.machine.setMembers(["tcp://b:5555"])) == [
      .publish(.brokers(["tcp://b:5555"]))
    ])
    // A broker that knows its own name lists itself first, so that a client that reached it
    // under another knows which it is.
    broker.machine.advertised = "tcp://b:5555"
    #expect(broker.take(broker.machine.setMembers(["tcp://a:5555", "tcp://b:5555"])) == [
      .publish(.brokers(["tcp://b:5555", "tcp://a:5555"]))
    ])
  }

  @Test func helloIsWelcomedAndPingsNameTheKeysBehind() {
    var broker = Harness()
    #expect(broker.send(.hello(client: "a")) == [.reply("p", Self.welcome)])
    #expect(
      broker.send(Self.write("a", 1, base: 0, "1")) == [
        .commit(key: "k", revision: 0, values: ["1"])
      ])
    #expect(
      broker.answer(.stored(revision: 0)) == [
        .publish(Self.update(1, "a", 1, "1")), .reply("p", .ack(key: "k", write: 1, version: 1)),
      ])
    let held = [KeyVersion(key: "k", version: 1), KeyVersion(key: "other", version: 3)]
    #expect(
      broker.send(.ping(versions: held)) == [
        .reply("p", .pong(instance: "i1", behind: [KeyVersion(key: "other", version: 0)]))
      ])
    #expect(broker.machine.statistics.hellos == 1)
    #expect(broker.machine.statistics.pings == 1)
    #expect(broker.machine.statistics.writesApplied == 1)
    #expect(broker.machine.statistics.keys == 1)
  }

  @Test func requestsNeedTheirConnectionsHello() {
    var broker = Harness()
    #expect(
      broker.send(Self.write("a", 1, base: 0, "1")) == [
        .reply(
          "p",
          .error(
            code: .helloFirst,
            message: "say HELLO first: this connection has not said HELLO to this broker, "
              + "or its client id said HELLO on another connection since", key: "k", write: 1))
      ])
    broker.hello("a", from: "p")
    #expect(
      broker.send(.get(client: "b", key: "k")) == [
        .reply(
          "p",
          .error(
            code: .badRequest, message: "client \"b\" is not the one this connection said HELLO as",
            key: nil, write: nil))
      ])
    #expect(broker.machine.statistics.withoutHello == 1)
    #expect(broker.machine.statistics.malformed == 1)
  }

  @Test func undecodableInputIsAnsweredAndReported() {
    var broker = Harness()
    // A bad base: the error still names the write, so the client can tell which was refused.
    let out = broker.sendRaw(["WRITE", "a", "1", "k", "x", "v"])
    #expect(out.count == 2)
    #expect(out.first == .report("rejectedRequest"))
    guard case .reply("p", .error(.badRequest, _, "k", 1)) = out.last else {
      Issue.record("not a bad-request error: \(out)")
      return
    }
    #expect(broker.sendRaw(["FROB"]).first == .report("rejectedRequest"))
    #expect(broker.machine.statistics.rejectedInput == 2)
  }

  @Test func anOversizedWriteIsRefusedAndReported() {
    var broker = Harness()
    broker.hello("a", from: "p")
    #expect(
      broker.send(Self.write("a", 1, base: 0, String(repeating: "x", count: 17))) == [
        .report("oversized"),
        .reply(
          "p", .error(code: .tooLarge, message: "value of 17 bytes exceeds 16", key: "k", write: 1)),
      ])
    #expect(broker.machine.statistics.oversized == 1)
  }

  @Test func silentClientsAreForgottenAtTheTimeout() {
    var broker = Harness(timeout: .seconds(10))
    broker.hello("a", from: "p")
    #expect(broker.wait(.seconds(1)) == [])
    #expect(broker.machine.statistics.activeClients == 1)
    // Remembered for the timeout, active only while heard from.
    #expect(broker.wait(.seconds(5)) == [])
    #expect(broker.machine.statistics.activeClients == 0)
    #expect(broker.machine.statistics.clients == 1)
    // Swept a quarter of the timeout apart at most.
    #expect(broker.wait(.seconds(3)) == [])
    #expect(broker.wait(.seconds(2)) == [])
    #expect(broker.wait(.seconds(1)) == [.report("forgotClients")])
    #expect(broker.machine.statistics.forgottenClients == 1)
    #expect(broker.machine.statistics.clients == 0)
  }

  // MARK: - Batches

  /// Writes that arrive while their key's commit is in flight wait, and are decided and stored
  /// together; each connection's answers keep the order of its requests.
  @Test func writesWaitingOnACommitGoOutAsOneBatch() {
    var broker = Harness(backend: .cluster)
    broker.hello("a", from: "pa")
    broker.hello("b", from: "pb")
    #expect(
      broker.send(Self.write("a", 1, base: 0, "1"), from: "pa") == [
        .commit(key: "k", revision: 0, values: ["1"])
      ])
    #expect(broker.send(Self.write("b", 1, base: 1, "2"), from: "pb") == [])
    #expect(broker.send(Self.write("a", 2, base: 2, "3"), from: "pa") == [])
    // A heartbeat is never held behind the store.
    #expect(broker.send(.ping(), from: "pa") == [.reply("pa", .pong(instance: "i1"))])
    #expect(
      broker.answer(.stored(revision: 7)) == [
        .publish(Self.update(1, "a", 1, "1")), .reply("pa", .ack(key: "k", write: 1, version: 1)),
        .commit(key: "k", revision: 7, values: ["3"]),
      ])
    #expect(
      broker.answer(.stored(revision: 8)) == [
        .publish(Self.update(2, "b", 1, "2")), .reply("pb", .ack(key: "k", write: 1, version: 2)),
        .publish(Self.update(3, "a", 2, "3")), .reply("pa", .ack(key: "k", write: 2, version: 3)),
      ])
    #expect(broker.commits.isEmpty)
  }

  /// The log's commits are answered before the next request is read: its answers need no
  /// place in a connection's order and go out as soon as they are decided.
  @Test func theLogAnswersEachWriteWithItsCommit() {
    var broker = Harness()
    broker.hello("a", from: "pa")
    #expect(
      broker.send(Self.write("a", 1, base: 0, "1"), from: "pa") == [
        .commit(key: "k", revision: 0, values: ["1"])
      ])
    #expect(
      broker.answer(.stored(revision: 0)) == [
        .publish(Self.update(1, "a", 1, "1")), .reply("pa", .ack(key: "k", write: 1, version: 1)),
      ])
    #expect(broker.machine.replies.waiting == 0)
  }

  /// An applied quiet write is answered by its update alone, with every backend; a rejected one
  /// as any write. In a cluster, its empty place in its connection's order of answers holds
  /// nothing back.
  @Test(arguments: [BrokerMachine.Backend.memory, .log, .cluster])
  func aQuietWriteIsAnsweredByItsUpdateAlone(backend: BrokerMachine.Backend) {
    var broker = Harness(backend: backend)
    broker.hello("a", from: "pa")
    var revision: Int64 = 0
    func decided(_ request: BrokerMessage) -> [Out] {
      var out = broker.send(request, from: "pa")
      while case .commit? = out.last {
        revision += 1
        out = broker.answer(.stored(revision: revision))
      }
      return out
    }
    #expect(
      decided(Self.write("a", 1, base: 0, "1", quiet: true)) == [
        .publish(Self.update(1, "a", 1, "1"))
      ])
    #expect(
      decided(.get(client: "a", key: "k")) == [
        .reply("pa", .snapshot(key: "k", version: 1, lastWrite: 1, value: Data("1".utf8), writes: ["a": 1]))
      ])
    #expect(
      decided(Self.write("a", 2, base: 0, "2", quiet: true)) == [
        .reply(
          "pa",
          .reject(
            key: "k", write: 2, version: 1, lastWrite: 1, value: Data("1".utf8),
            writes: ["a": 1]))
      ])
    #expect(broker.machine.replies.waiting == 0)
  }

  /// A broker without `--data` stores nothing: each write is answered as it is decided, and a
  /// stale one rejected, with no commit between.
  @Test func inMemoryEachWriteIsAnsweredAsItIsDecided() {
    var broker = Harness(backend: .memory)
    broker.hello("a", from: "pa")
    broker.hello("b", from: "pb")
    #expect(
      broker.send(Self.write("a", 1, base: 0, "1"), from: "pa") == [
        .publish(Self.update(1, "a", 1, "1")), .reply("pa", .ack(key: "k", write: 1, version: 1)),
      ])
    #expect(
      broker.send(Self.write("b", 1, base: 0, "2"), from: "pb") == [
        .reply(
          "pb",
          .reject(
            key: "k", write: 1, version: 1, lastWrite: 0, value: Data("1".utf8),
            writes: ["a": 1]))
      ])
    #expect(broker.commits.isEmpty)
    #expect(broker.machine.flights.isEmpty)
    #expect(broker.machine.entries["k"]?.version == 1)
  }

  @Test func aStaleWriteIsRejectedWithWhatItMissed() {
    var broker = Harness()
    broker.hello("a", from: "pa")
    broker.hello("b", from: "pb")
    _ = broker.send(Self.write("a", 1, base: 0, "1"), from: "pa")
    _ = broker.answer(.stored(revision: 0))
    // Nothing to store: answered at once.
    #expect(
      broker.send(Self.write("b", 1, base: 0, "9"), from: "pb") == [
        .reply(
          "pb",
          .reject(
            key: "k", write: 1, version: 1, lastWrite: 0, value: Data("1".utf8), writes: ["a": 1]))
      ])
    #expect(broker.machine.statistics.writesRejected == 1)
  }

  @Test func aRefusedCommitAnswersItsWritesWithAStorageError() {
    var broker = Harness()
    broker.hello("a", from: "p")
    _ = broker.send(Self.write("a", 1, base: 0, "1"))
    #expect(
      broker.answer(.refused("disk full")) == [
        .report("storageFailed"),
        .reply("p", .error(code: .storage, message: "disk full", key: "k", write: 1)),
      ])
    #expect(broker.machine.statistics.storageErrors == 1)
    #expect(broker.machine.statistics.keys == 0)
  }

  // MARK: - A cluster's store

  @Test func anUnansweredCommitIsSentAgainAndItsEchoIsItsAnswer() {
    var broker = Harness(backend: .cluster)
    broker.hello("a", from: "p")
    #expect(
      broker.send(Self.write("a", 1, base: 0, "1")) == [
        .commit(key: "k", revision: 0, values: ["1"])
      ])
    #expect(broker.answer(.unanswered("timed out")) == [.report("commitUnanswered")])
    #expect(broker.wait(BrokerMachine.retryDelay / 2) == [.recordHeard(["a"])])
    // The same record against the same revision: only one of the two can ever apply.
    #expect(
      broker.wait(BrokerMachine.retryDelay) == [.commit(key: "k", revision: 0, values: ["1"])])
    let flight = broker.machine.state(of: "k")!.flight!
    let stored = StoredRecord(
      revision: 7,
      record: ClusterRecord(entry: flight.entry!, client: "a", write: 1, commit: flight.name))
    #expect(
      broker.answer(.changed(stored)) == [
        .publish(Self.update(1, "a", 1, "1")), .reply("p", .ack(key: "k", write: 1, version: 1)),
      ])
    #expect(broker.machine.revision(of: "k") == 7)
    #expect(broker.machine.statistics.storageErrors == 1)
  }

  @Test func anotherBrokersChangeIsPublishedAfterTheKeysOwnCommit() {
    var broker = Harness(backend: .cluster)
    broker.hello("a", from: "p")
    _ = broker.send(Self.write("a", 1, base: 0, "1"))
    var entry = BrokerEntry.empty
    entry.apply(
      BrokerEntry.Applied(version: 1, client: "a", write: 1), value: Data("1".utf8), instance: "i1")
    entry.apply(
      BrokerEntry.Applied(version: 2, client: "b", write: 1), value: Data("2".utf8), instance: "i2")
    let other = StoredRecord(
      revision: 6, record: ClusterRecord(entry: entry, client: "b", write: 1, commit: "r2/1"))
    #expect(broker.take(broker.machine.watched([(key: "k", stored: other)])) == [])
    #expect(
      broker.answer(.stored(revision: 5)) == [
        .publish(Self.update(1, "a", 1, "1")), .reply("p", .ack(key: "k", write: 1, version: 1)),
        .publish(Self.update(2, "b", 1, "2")),
      ])
    // At or below the key's revision: already taken.
    #expect(broker.machine.watched([(key: "k", stored: other)]).isEmpty)
    #expect(broker.machine.revision(of: "k") == 6)
  }

  @Test func aBrokerCutFromItsStoreSaysSo() {
    var broker = Harness(backend: .cluster)
    broker.hello("a", from: "p")
    broker.machine.setAvailable(false)
    let unavailable = BrokerMessage.error(
      code: .unavailable, message: "this broker cannot reach its cluster's store (etcd)",
      key: nil, write: nil)
    #expect(broker.send(.ping()) == [.reply("p", unavailable)])
    #expect(broker.send(.hello(client: "a")) == [.reply("p", unavailable)])
    // Not `storage`: an earlier delivery of the write may be stored by a commit in doubt, and
    // "not applied" would have the client send its mutation again.
    #expect(
      broker.send(Self.write("a", 1, base: 0, "1")) == [
        .reply(
          "p",
          .error(
            code: .unavailable, message: "this broker cannot reach its cluster's store (etcd)",
            key: "k", write: 1))
      ])
    broker.machine.setAvailable(true)
    #expect(broker.send(.ping()) == [.reply("p", .pong(instance: "i1"))])
    #expect(broker.machine.statistics.unavailable == 3)
    #expect(broker.machine.statistics.storageErrors == 0)
  }

  /// A refused batch says "not applied" only of the writes that are not: one the key's entry
  /// shows applied (a second delivery) is rejected as applied.
  @Test func aRefusedBatchRejectsTheWritesAlreadyApplied() {
    var broker = Harness(backend: .cluster)
    broker.hello("a", from: "pa")
    broker.hello("b", from: "pb")
    _ = broker.send(Self.write("a", 1, base: 0, "1"), from: "pa")
    _ = broker.answer(.stored(revision: 3))
    #expect(
      broker.send(Self.write("b", 1, base: 1, "2"), from: "pb") == [
        .commit(key: "k", revision: 3, values: ["2"])
      ])
    #expect(broker.send(Self.write("a", 1, base: 0, "1"), from: "pa") == [])
    #expect(
      broker.answer(.refused("etcd is unreachable")) == [
        .report("storageFailed"),
        .reply("pb", .error(code: .storage, message: "etcd is unreachable", key: "k", write: 1)),
        .commit(key: "k", revision: 3, values: []),
      ])
    #expect(
      broker.answer(.refused("etcd is unreachable")) == [
        .report("storageFailed"),
        .reply(
          "pa",
          .reject(
            key: "k", write: 1, version: 1, lastWrite: 1, value: Data("1".utf8), writes: ["a": 1])),
      ])
    #expect(broker.machine.statistics.storageErrors == 1)
  }

  /// A cluster's broker records whom it heard every quarter timeout, with the time its record
  /// reaches. Another broker's record that is not renewed holds the forgetting back (that broker
  /// may be hearing clients it cannot record), until it retires two timeouts after it was made.
  @Test func whomABrokerHeardIsRecordedEveryQuarterTimeout() {
    var broker = Harness(backend: .cluster, timeout: .seconds(8))
    broker.hello("a", from: "p")
    #expect(broker.wait(.milliseconds(100)) == [.recordHeard(["a"])])
    #expect(broker.wait(.seconds(1)) == [])
    #expect(broker.wait(.seconds(1)) == [.recordHeard(["a"])])
    let made = broker.machine.wallClock
    broker.machine.heard(["r2": HeardRecord(asOf: made, clients: ["b": made - 1_000])])
    #expect(broker.machine.forgettingCutoff == made - 8_000)
    // Silent for longer than the timeout, "a" is forgotten here; the record goes on, empty.
    #expect(broker.wait(.seconds(11)) == [.report("forgotClients"), .recordHeard([])])
    #expect(broker.machine.forgettingCutoff == made - 8_000)
    #expect(broker.machine.heardElsewhere.keys.sorted() == ["b"])
    // Retired, the record goes from the store too.
    #expect(broker.wait(.seconds(6)) == [.removeHeard("r2"), .recordHeard([])])
    #expect(broker.machine.forgettingCutoff == broker.machine.wallClock - 8_000)
    #expect(broker.machine.heardElsewhere.isEmpty)
  }

  /// Back from an outage of its store, a broker records whom it heard at the next tick, rather
  /// than a quarter timeout later: the others forget no one until it does.
  @Test func aBrokerBackFromAnOutageRecordsWhomItHeardAtOnce() {
    var broker = Harness(backend: .cluster, timeout: .seconds(8))
    broker.hello("a", from: "p")
    #expect(broker.wait(.milliseconds(100)) == [.recordHeard(["a"])])
    broker.machine.setAvailable(false)
    #expect(broker.wait(.milliseconds(100)) == [])
    broker.machine.setAvailable(true)
    #expect(broker.wait(.milliseconds(100)) == [.recordHeard(["a"])])
    #expect(broker.wait(.milliseconds(100)) == [])
  }
}
