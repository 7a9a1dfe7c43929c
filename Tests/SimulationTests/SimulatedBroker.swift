import Foundation

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// One run of a simulated broker: the real ``BrokerCore`` (the serving loop without its sockets)
/// around the real machine, with the real log for a single broker, or the real
/// ``ClusterDriver`` (its echo filter included) on a ``SimulatedStore`` for a broker of a cluster.
/// What it sends (replies, publications, transactions for etcd) lands in order in its outbox,
/// which the simulation carries over its network.
final class SimulatedBroker {
  /// What the broker sent, in order.
  enum Sent {
    case reply(peer: Data, BrokerMessage)
    case publish(BrokerMessage)
    case commit(EtcdCommit)
    /// An unconditional put (whom the broker heard from), or with `nil` a delete (of another
    /// broker run's record).
    case put(key: String, Data?)
  }

  /// Where the broker's transport and its store put what it sends.
  final class Outbox: BrokerTransport {
    var sent: [Sent] = []
    /// A message that does not decode as it was encoded.
    var undecodable: String?

    func reply(_ message: BrokerMessage, to peer: Data) -> Int? {
      let frames = message.frames
      do {
        sent.append(.reply(peer: peer, try BrokerMessage(frames: frames)))
      } catch {
        undecodable = "a reply: \(error)"
      }
      return frames.byteCount
    }

    func publish(_ message: BrokerMessage) -> Int? {
      let frames = message.frames
      do {
        sent.append(.publish(try BrokerMessage(published: frames)))
      } catch {
        undecodable = "a publication: \(error)"
      }
      return frames.byteCount
    }

    func take() -> [Sent] {
      defer { sent = [] }
      return sent
    }
  }

  /// A broker's view of the simulated etcd, as its driver reaches it: transactions go to the
  /// outbox, and the simulation queues the events that come back.
  final class SimulatedStore: BrokerCluster, @unchecked Sendable {
    let instance: String
    private let outbox: Outbox
    private let loaded: [String: BrokerClusterRecord]
    var events: [BrokerClusterEvent] = []

    init(instance: String, records: [String: BrokerClusterRecord], outbox: Outbox) {
      self.instance = instance
      loaded = records
      self.outbox = outbox
    }

    func setWake(_ wake: @escaping @Sendable () -> Void) {}
    func loadAll() throws -> [String: BrokerClusterRecord] { loaded }
    func close() {}

    func put(key: String, record: Data) {
      outbox.sent.append(.put(key: key, record))
    }

    func remove(key: String) {
      outbox.sent.append(.put(key: key, nil))
    }

    func commit(key: String, record: Data?, expecting revision: Int64, id: UInt64) {
      outbox.sent.append(.commit(EtcdCommit(key: key, record: record, revision: revision, id: id)))
    }

    func takeEvents() -> [BrokerClusterEvent] {
      defer { events = [] }
      return events
    }
  }

  private let core: BrokerCore
  private let outbox = Outbox()
  private let store: SimulatedStore?
  /// Which run of its slot this is: answers meant for an earlier run are not delivered.
  let run: Int
  /// Where this broker's watch of the cluster resumes.
  var watchNext: Int64 = 1
  /// When the scheduled tick is due, if one is.
  var tickDue: Duration?

  /// A single broker.
  ///
  /// - Parameter directory: The data directory, or `nil` for a broker in memory.
  init(instance: String, directory: URL?, configuration: BrokerConfiguration, run: Int) throws {
    let log = try BrokerLog(directory: directory)
    self.run = run
    store = nil
    core = BrokerCore(
      machine: BrokerMachine(
        instance: instance, run: instance, backend: directory == nil ? .memory : .log,
        configuration: configuration,
        publisherEndpoint: "inproc://simulated-publisher", entries: log.loaded, now: .zero),
      backend: .log(log), transport: outbox, counted: { _ in }, report: { _ in })
  }

  /// A broker of the cluster whose store is `etcd`, starting from what it holds now, at
  /// `startedAt` (in milliseconds of the world's clock, which every broker shares).
  init(
    cluster etcd: SimulatedEtcd, configuration: BrokerConfiguration, run: Int, name: String,
    startedAt: Int64
  ) throws {
    self.run = run
    watchNext = etcd.revision + 1
    let store = SimulatedStore(instance: etcd.instance, records: etcd.records, outbox: outbox)
    self.store = store
    let driver = ClusterDriver(cluster: store, run: name)
    let loaded = try driver.loadAll()
    core = BrokerCore(
      machine: BrokerMachine(
        instance: etcd.instance, run: name, backend: .cluster, configuration: configuration,
        publisherEndpoint: "inproc://simulated-publisher", records: loaded.records,
        heard: loaded.heard, now: .zero, startedAt: startedAt),
      backend: .cluster(driver), transport: outbox, counted: { _ in }, report: { _ in })
  }

  var instance: String { core.machine.instance }
  var entries: [String: BrokerEntry] { core.machine.entries }
  /// How long its serving loop would wait before it ticks.
  var tickInterval: Duration { core.machine.tickInterval }
  /// Whether no commit is out or waits to be sent again.
  var isIdle: Bool { core.machine.flights.isEmpty && core.machine.retries.isEmpty }
  /// What the outbox could not decode, if anything.
  var undecodable: String? { outbox.undecodable }

  /// Takes a reloaded allow-list.
  func setAllowList(_ list: AllowList) { core.setAllowList(list) }

  /// The CURVE key `client`'s id belongs to, as the broker knows it.
  func owner(of client: String) -> String? { core.machine.owner(of: client) }

  /// What one request from a connection with the CURVE key `clientKey` makes the broker send, in
  /// order.
  func receive(_ frames: [Data], from peer: Data, clientKey: String, at now: Duration) -> [Sent] {
    core.receive(FrameBuffer(frames), from: peer, clientKey: clientKey, at: now)
    return outbox.take()
  }

  /// What the store's event makes the broker send.
  func stored(_ event: BrokerClusterEvent) -> [Sent] {
    store?.events.append(event)
    core.takeStoreEvents()
    return outbox.take()
  }

  /// What the time makes the broker send.
  func tick(at now: Duration) -> [Sent] {
    core.tick(at: now)
    return outbox.take()
  }
}
