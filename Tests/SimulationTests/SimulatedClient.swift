import Foundation

@testable import SharedBroker

/// One simulated process: the real ``ClientStateMachine`` and key machines, its two
/// connections to the broker (DEALER and SUB) as the simulation's network sees them, and the
/// mutations its user made.
final class SimulatedClient {
  let index: Int
  var machine: ClientStateMachine
  let channels: [KeySlot]
  var actions = ClientActions()
  var alive = true
  /// The DEALER's connection: up or not, its ROUTER identity, and an epoch that changes with
  /// every connection, so a message sent on an old one is not delivered on a new one.
  var dealerUp = false
  var dealerEpoch = 0
  var peer = Data()
  /// The broker of the cluster its DEALER is connected (or connecting) to, and the one its SUB
  /// is connected to.
  var broker = 0
  var subscriberBroker = 0
  /// The SUB's connection, which connects once the first WELCOME names the publisher.
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
  /// When the client's loop next wakes, as a generation that later schedules replace.
  var wakeGeneration = 0
  /// Turns taken at the current instant, to catch a loop that spins.
  var turnsNow = 0
  var lastTurn = Duration.zero
  /// Requests other than heartbeats sent (`SYNC`, `GET`, `SEED`, `WRITE`).
  var requestsSent = 0
  /// When each mutation was made, by tag.
  var mutatedAt: [String: Duration] = [:]
  /// Per key, when the client last held it in sync, and when it last came back in sync after
  /// longer out of it than a cluster keeps a writer's record (see `Simulation.excused`).
  var lastSynced: [Duration]
  var cameBackAfterTimeout: [Duration]

  init(
    index: Int, id: String, keys: [String], heartbeat: Duration, maxWritesInFlight: Int,
    now: ContinuousClock.Instant
  ) {
    self.index = index
    machine = ClientStateMachine(id: id, heartbeat: heartbeat, missedHeartbeats: 3, now: now)
    channels = keys.map { key in
      KeySlot(
        KeyStateMachine(
          key: key, clientID: id, initialValue: Tally(), codec: .json, heartbeat: heartbeat,
          maxWritesInFlight: maxWritesInFlight
        )
      )
    }
    tags = keys.map { _ in [] }
    lastSynced = keys.map { _ in .zero }
    cameBackAfterTimeout = keys.map { _ in .zero }
  }

  var id: String { machine.id }

  /// The tags of `key` the broker confirmed to this client.
  func confirmedTags(_ key: Int) -> ArraySlice<String> {
    tags[key].prefix(tags[key].count - channels[key].unconfirmedWriteCount)
  }
}
