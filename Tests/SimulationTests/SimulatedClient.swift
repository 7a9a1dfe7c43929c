import Foundation
import Logging
import OpenCombine
import Synchronization

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// One simulated process: the real ``ClientStorage`` and ``ClientDriver`` with its
/// ``ClientMachine``, the real references its user mutates through, its two connections to the broker (DEALER and SUB) as
/// the simulation's network sees them, and the mutations its user made.
final class SimulatedClient {
  let index: Int
  let storage: ClientStorage
  /// Its machine's id and the brokers it was given, kept apart from the machine: the
  /// simulation reads them while the driver holds its state, from the transport's calls.
  let id: String
  let givenBrokers: [String]
  /// What the client's I/O thread runs: the simulation is that thread.
  let driver: ClientDriver
  let references: [BrokerReference<Tally>]
  /// The storage asked to wake the I/O thread: the simulation schedules its turn.
  private let wakeRequested = WakeRequest()

  private final class WakeRequest: Sendable {
    let requested = Mutex(false)
  }
  var alive = true
  /// Its CURVE public key, as the brokers' allow-list names it.
  var key: String { "key-\(index)" }
  /// The DEALER's connection: up or not, its ROUTER identity, and an epoch that changes with
  /// every connection, so a message sent on an old one is not delivered on a new one.
  var dealerUp = false
  var dealerEpoch = 0
  var peer = Data()
  /// The endpoint its DEALER is connected (or connecting) to, as its machine named it, and the
  /// broker of the cluster it reaches; the broker its SUB is connected to.
  var dealerEndpoint: String
  var broker: Int
  var subscriberBroker: Int
  /// The SUB's connection, which connects once the machine names the publisher.
  var publisherKnown = false
  var subscriberUp = false
  var subscriberEpoch = 0
  /// The subscriptions took effect on the current SUB connection.
  var subscribed = false
  /// When the last message on each connection arrives: a connection keeps its order.
  var lastDealerOut = Duration.zero
  var lastDealerIn = Duration.zero
  var lastSubscriber = Duration.zero
  /// How far this process's clock is ahead of the simulation's.
  var clockOffset = Duration.zero
  /// Every mutation's tag, per key, in order; the first `count - unconfirmed` are confirmed.
  var tags: [[String]]
  /// A wake-up the storage asked for is scheduled and its turn has not run yet.
  var wakePending = false
  /// When the client's loop next wakes, as a generation that later schedules replace.
  var wakeGeneration = 0
  /// Turns taken at the current instant, to catch a loop that spins.
  var turnsNow = 0
  var lastTurn = Duration.zero
  /// Requests other than heartbeats sent (`SYNC`, `GET`, `SEED`, `WRITE`).
  var requestsSent = 0
  /// What each key's observers were last told, as a publisher's subscriber hears it.
  let told: ToldValues
  private var subscriptions: [AnyCancellable] = []

  /// The values observers heard, per key, in order of arrival.
  final class ToldValues: @unchecked Sendable {
    var last: [Tally]
    init(keys: Int) { last = Array(repeating: Tally(), count: keys) }
  }

  // The storage and its references hold each other until the storage closes, as a
  // BrokerClient's does when it goes.
  deinit { storage.close() }

  init(
    index: Int, id: String, keys: [String], heartbeat: Duration, maxWritesInFlight: Int,
    brokers: BrokerList, now: Moment
  ) {
    self.index = index
    self.id = id
    givenBrokers = brokers.given
    dealerEndpoint = brokers.current
    broker = Simulation.broker(at: brokers.current)
    subscriberBroker = broker
    let wakeRequested = wakeRequested
    let storage = ClientStorage(
      brokers: brokers, endpoint: "simulated",
      logger: Logger(label: "simulated-client") { _ in SwiftLogNoOpLogHandler() },
      wake: { wakeRequested.requested.withLock { $0 = true } })
    self.storage = storage
    driver = ClientDriver(
      machine: ClientMachine(
        id: id, brokers: brokers, heartbeat: heartbeat, missedHeartbeats: 3,
        maxWritesInFlight: maxWritesInFlight, now: now),
      storage: storage)
    references = keys.map { key in
      storage.reference(key: key, initialValue: Tally(), codec: .json) { slot in
        BrokerReference(
          key: key, initialValue: Tally(), slot: slot, storage: storage, client: nil)
      }
    }
    tags = keys.map { _ in [] }
    let told = ToldValues(keys: keys.count)
    self.told = told
    subscriptions = references.enumerated().map { key, reference in
      reference.publisher.sink { told.last[key] = $0 }
    }
  }

  /// The machine as it is now.
  var machine: ClientMachine { driver.machine }

  /// Whether the storage asked for a wake-up since the last call.
  func takeWakeRequest() -> Bool {
    wakeRequested.requested.withLock { requested in
      defer { requested = false }
      return requested
    }
  }

  /// The tags of `key` the broker confirmed to this client.
  func confirmedTags(_ key: Int) -> ArraySlice<String> {
    tags[key].prefix(
      tags[key].count - storage.unconfirmedWriteCount(of: [references[key].key]))
  }
}
