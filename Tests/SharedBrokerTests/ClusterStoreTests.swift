import Foundation
import Logging
@testable import SharedBroker
import Testing

/// The broker's decisions on a shared store, driven synchronously against an in-memory store
/// whose faults the tests choose: a commit that was stored but never answered, one that may
/// still apply late, a key another broker changed, a store that cannot be reached.
@Suite struct ClusterStoreTests {
  /// One broker of a cluster, fed requests from one connection at a time.
  final class Broker {
    let core: BrokerCore

    init(_ cluster: FakeCluster) throws {
      let store = try BrokerStore(cluster: cluster)
      core = BrokerCore(
        instance: store.instance, store: store, configuration: BrokerConfiguration(seedWindow: .zero),
        publisherEndpoint: "inproc://published", logger: Logger(label: "test"), now: .zero)
    }

    /// What `message` from connection `peer` makes the broker send: replies and publications.
    func send(_ message: BrokerMessage, from peer: String = "p") -> (reply: BrokerMessage?, published: [BrokerMessage]) {
      var reply: BrokerMessage?
      var published: [BrokerMessage] = []
      core.handle(message.frames, from: Data(peer.utf8), at: .seconds(1)) { output in
        switch output {
        case .reply(_, let message): reply = message
        case .publish(let message): published.append(message)
        }
      }
      return (reply, published)
    }

    func write(_ client: String, _ write: UInt64, base: UInt64, _ value: String, after: UInt64? = nil)
      -> BrokerMessage?
    {
      send(.write(client: client, write: write, key: "k", base: base, value: Data(value.utf8), after: after)).reply
    }
  }

  @Test func aCommitStoredButNotAnsweredIsReportedAppliedAfterAResync() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    #expect(broker.write("c", 1, base: 0, "1") == .ack(key: "k", write: 1, version: 1))

    cluster.nextCommit = .storeThenFail
    // Its fate unknown to the broker: no answer, and none to what is pipelined behind it
    // either, which is refused as from a connection that must say HELLO again.
    #expect(broker.write("c", 2, base: 1, "2") == nil)
    guard case .error(.helloFirst, _, "k", 3)? = broker.write("c", 3, base: 2, "3", after: 2) else {
      Issue.record("a write pipelined behind an unanswered one was answered as if decided")
      return
    }
    _ = broker.send(.hello(client: "c"))
    guard case .snapshot(_, 2, 2, let value, _)? = broker.send(.get(client: "c", key: "k")).reply else {
      Issue.record("the snapshot does not say the stored write was applied")
      return
    }
    #expect(value == Data("2".utf8))
  }

  /// A commit that went unanswered may still be in etcd's log: the key is settled (its stored
  /// state written again, moving its revision) before anything about it is answered, so the
  /// late commit can no longer apply and "not applied" stays true.
  @Test func aCommitThatMayApplyLateIsFencedBeforeTheSnapshot() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    #expect(broker.write("c", 1, base: 0, "1") == .ack(key: "k", write: 1, version: 1))
    cluster.nextCommit = .failThenApplyLate
    #expect(broker.write("c", 2, base: 1, "2") == nil)

    _ = broker.send(.hello(client: "c"))
    guard case .snapshot(_, 1, 1, _, _)? = broker.send(.get(client: "c", key: "k")).reply else {
      Issue.record("the snapshot should say write 2 was not applied")
      return
    }
    #expect(cluster.applyLateCommit() == false)
    // The client sends its change again under a new id: applied once.
    #expect(broker.write("c", 3, base: 1, "2") == .ack(key: "k", write: 3, version: 2))
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

  @Test func aBrokerCutFromItsStoreSaysSoAndRefusesWrites() throws {
    let cluster = FakeCluster()
    let broker = try Broker(cluster)
    _ = broker.send(.hello(client: "c"))
    cluster.available = false
    guard case .error(.unavailable, _, nil, nil)? = broker.send(.ping(versions: [])).reply,
      case .error(.unavailable, _, nil, nil)? = broker.send(.hello(client: "c")).reply,
      case .error(.storage, _, "k", 1)? = broker.write("c", 1, base: 0, "1"),
      case .error(.storage, _, "k", 0)? = broker.send(.get(client: "c", key: "k")).reply
    else {
      Issue.record("a broker without its store must say so and refuse")
      return
    }
    #expect(cluster.commits == 0)
    cluster.available = true
    #expect(broker.write("c", 2, base: 0, "1") == .ack(key: "k", write: 2, version: 1))
  }
}

/// An in-memory shared store with etcd's compare-and-set on revisions, driven from the test's
/// thread only, whose next commit can be made to fail after, or before, being stored.
final class FakeCluster: BrokerCluster, @unchecked Sendable {
  enum Fault {
    /// Stores the record, then throws as a lost answer would.
    case storeThenFail
    /// Throws; the commit stays pending and may apply later (``applyLateCommit()``).
    case failThenApplyLate
    /// Stores the record, and answers as a retry on another member would: the key changed.
    case storeThenAnswerChanged
  }

  struct LostAnswer: Error {}

  let instance = "00000000000000001-fake"
  var available = true
  var isAvailable: Bool { available }
  var nextCommit: Fault?
  private(set) var commits = 0
  private var records: [String: BrokerClusterRecord] = [:]
  private var revision: Int64 = 0
  private var late: (key: String, record: Data, expecting: Int64)?

  func setOnChange(_ onChange: @escaping @Sendable () -> Void) {}
  func loadAll() throws -> [String: BrokerClusterRecord] { records }
  func read(key: String) throws -> BrokerClusterRecord? { records[key] }
  func takeChanges() -> [(key: String, record: BrokerClusterRecord)] { [] }
  func close() {}

  func commit(key: String, record: Data?, expecting revision: Int64) throws -> BrokerClusterCommit {
    commits += 1
    if let record, let fault = nextCommit {
      nextCommit = nil
      switch fault {
      case .storeThenFail: _ = apply(key, record, expecting: revision)
      case .failThenApplyLate: late = (key, record, revision)
      case .storeThenAnswerChanged:
        _ = apply(key, record, expecting: revision)
        return .changed(records[key])
      }
      throw LostAnswer()
    }
    return apply(key, record, expecting: revision)
  }

  /// Lets the pending commit reach the store now; returns whether it applied.
  func applyLateCommit() -> Bool {
    guard let late, case .stored = apply(late.key, late.record, expecting: late.expecting) else { return false }
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
