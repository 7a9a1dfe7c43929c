import Foundation
internal import Logging

/// What the broker does with each request, with no sockets, threads or clocks of its own: the
/// server's thread feeds it the frames it reads and the time, and performs what it answers
/// (replies to one connection, updates for every subscriber). The deterministic simulation in
/// the tests drives the same type.
final class BrokerCore {
  /// What a request makes the broker send.
  enum Output {
    /// A reply to the connection `peer` (its ROUTER identity).
    case reply(peer: Data, BrokerMessage)
    /// A message for every subscriber of its key's topic.
    case publish(BrokerMessage)
  }

  /// This broker run's id.
  let instance: String
  let store: BrokerStore
  private let maxValueSize: Int
  private let seedWindow: Duration
  private let publisherEndpoint: String
  private let logger: Logger
  private var sessions: ClientSessions
  /// What the broker has counted so far.
  private(set) var statistics = BrokerStatistics()

  /// - Parameters:
  ///   - publisherEndpoint: Where the PUB socket is bound, as WELCOME announces it.
  ///   - now: The time since the broker started.
  init(
    instance: String, store: BrokerStore, configuration: BrokerConfiguration,
    publisherEndpoint: String,
    logger: Logger, now: Duration
  ) {
    self.instance = instance
    self.store = store
    self.maxValueSize = configuration.maxValueSize
    self.seedWindow = configuration.seedWindow
    self.publisherEndpoint = publisherEndpoint
    self.logger = logger
    sessions = ClientSessions(timeout: configuration.clientTimeout)
    sessions.adopt(store.clients, at: now)
    statistics.clients = sessions.count
    statistics.keys = store.entries.count
  }

  /// Counts a connection refused by the CURVE allow-list.
  func deniedClient() {
    statistics.deniedClients += 1
  }

  /// Drops what the broker keeps for clients that went silent for longer than the timeout;
  /// returns whether there were any.
  @discardableResult
  func forgetSilentClients(at now: Duration) -> Bool {
    let expired = sessions.expire(at: now)
    guard !expired.isEmpty else { return false }
    store.forget(expired)
    statistics.forgottenClients += expired.count
    statistics.clients = sessions.count
    logger.info("Forgot silent clients", metadata: ["count": "\(expired.count)"])
    return true
  }

  /// Handles one request (`frames` without the ROUTER identity) from the connection `peer`.
  func handle(
    _ frames: some Collection<Data>, from peer: Data, at now: Duration, output: (Output) -> Void
  ) {
    statistics.requests += 1
    guard !frames.isEmpty else { return }
    func reply(_ message: BrokerMessage) { output(.reply(peer: peer, message)) }
    let request: BrokerMessage
    do {
      request = try BrokerMessage(frames: Array(frames))
    } catch {
      switch error {
      case .malformed, .version: statistics.malformed += 1
      case .unknownCommand: statistics.unknownCommands += 1
      case .invalidKey: statistics.invalidKeys += 1
      }
      let rejected = statistics.rejectedInput
      // Log the first few, then every power of two, so a flood cannot flood the log too.
      if rejected <= 8 || rejected & (rejected - 1) == 0 {
        logger.warning(
          "Rejected request", metadata: ["reason": "\(error)", "rejected so far": "\(rejected)"])
      }
      let written = BrokerMessage.writeFields(of: Array(frames))
      reply(
        .error(
          code: error.code, message: error.description, key: written?.key, write: written?.write))
      return
    }
    // A broker cut from its cluster's store can neither apply writes nor vouch for its values:
    // clients hear so and move to another broker of the cluster.
    if store.isUnavailable, request.isHelloOrPing {
      statistics.unavailable += 1
      reply(
        .error(
          code: .unavailable, message: "this broker cannot reach its cluster's store (etcd)",
          key: nil, write: nil))
      return
    }
    switch request {
    case .hello(let client):
      sessions.heard(from: client, peer: peer, at: now)
      statistics.clients = sessions.count
      reply(
        .welcome(
          instance: instance, publisher: publisherEndpoint, maxValueSize: UInt64(maxValueSize)))
      return
    case .ping(let versions):
      sessions.heard(fromPeer: peer, at: now)
      let behind = versions.compactMap { held -> KeyVersion? in
        let version = store.entries[held.key]?.version ?? 0
        return version == held.version ? nil : KeyVersion(key: held.key, version: version)
      }
      reply(.pong(instance: instance, behind: behind))
      return
    default:
      break
    }
    if let client = request.client {
      func refuse(_ code: BrokerErrorCode, _ message: String) {
        let written: (key: String, write: UInt64)? =
          if case .write(_, let write, let key, _, _, _) = request { (key, write) } else { nil }
        reply(.error(code: code, message: message, key: written?.key, write: written?.write))
      }
      guard let hello = sessions.heard(fromPeer: peer, at: now) else {
        statistics.withoutHello += 1
        refuse(
          .helloFirst,
          "say HELLO first: this connection has not said HELLO to this broker, "
            + "or its client id said HELLO on another connection since"
        )
        return
      }
      guard hello == client else {
        statistics.malformed += 1
        refuse(.badRequest, "client \"\(client)\" is not the one this connection said HELLO as")
        return
      }
    }
    switch request {
    case .sync(let client, let key):
      output(.publish(.synced(key: key, client: client)))
    case .get(let client, let key):
      // During the seed window, "no value" may only mean that no copy has arrived yet.
      if now < seedWindow, store.lacks(key) {
        reply(
          .error(
            code: .seeding, message: "no copy of this key has arrived yet; ask again", key: key,
            write: 0))
        return
      }
      guard store.refresh(key) else {
        reply(
          .error(
            code: .storage, message: "the cluster's store did not answer; ask again", key: key,
            write: 0))
        return
      }
      publishClusterUpdates(output)
      reply(snapshot(key: key, client: client))
    case .seed(let client, let key, let origin, let version, let value, let writes):
      // Unanswered when the cluster cannot be read: the client offers its copy again.
      guard store.refresh(key) else { return }
      do {
        let update = try seed(
          client: client, key: key, origin: .init(instance: origin, version: version), value: value,
          writes: writes
        )
        // What other brokers wrote comes first: the adopted copy's version follows it.
        publishClusterUpdates(output)
        if let update { output(.publish(update)) }
      } catch {
        publishClusterUpdates(output)
        // Unanswered: the client offers its copy again after a heartbeat.
        statistics.storageErrors += 1
        logger.error("Could not persist a seed", metadata: ["key": "\(key)", "error": "\(error)"])
        return
      }
      reply(snapshot(key: key, client: client))
    case .write(let client, let write, let key, let base, let value, let after):
      guard value.count <= maxValueSize else {
        statistics.oversized += 1
        logger.warning(
          "Rejected oversized value", metadata: ["key": "\(key)", "bytes": "\(value.count)"])
        reply(
          .error(
            code: .tooLarge, message: "value of \(value.count) bytes exceeds \(maxValueSize)",
            key: key,
            write: write
          )
        )
        return
      }
      if now < seedWindow, store.awaitsCopies(key) {
        reply(
          .error(
            code: .seeding,
            message: "collecting clients' copies of keys until \(seedWindow) after start",
            key: key, write: write
          )
        )
        return
      }
      do {
        switch try store.write(
          client: client, write: write, key: key, base: base, value: value, after: after)
        {
        case .applied(let version):
          statistics.writesApplied += 1
          statistics.keys = store.entries.count
          // What other brokers wrote before this write goes out before it.
          publishClusterUpdates(output)
          // Publish first: propagation to every reader matters more than the writer's ACK.
          output(
            .publish(
              .update(key: key, version: version, client: client, write: write, value: value)))
          reply(.ack(key: key, write: write, version: version))
        case .found(let version):
          publishClusterUpdates(output)
          reply(.ack(key: key, write: write, version: version))
        case .rejected(let version, let lastWrite, let current, let writes):
          statistics.writesRejected += 1
          publishClusterUpdates(output)
          reply(
            .reject(
              key: key, write: write, version: version, lastWrite: lastWrite, value: current,
              writes: writes))
        }
      } catch BrokerStore.ClusterFailure.unknownOutcome(let error) {
        // Maybe stored: an answer either way could be wrong, and so could an answer to the
        // writes pipelined behind it. The client is made to say HELLO again and sync, and learns
        // the write's fate from the snapshot, which waits until the store has settled it.
        sessions.requireHello(from: client)
        statistics.storageErrors += 1
        publishClusterUpdates(output)
        logger.error(
          "The cluster's store stopped answering during a write",
          metadata: ["key": "\(key)", "error": "\(error)"])
      } catch {
        statistics.storageErrors += 1
        publishClusterUpdates(output)
        logger.error("Could not persist a write", metadata: ["key": "\(key)", "error": "\(error)"])
        reply(.error(code: .storage, message: "\(error)", key: key, write: write))
      }
    case .hello, .ping:
      break
    case .welcome, .pong, .snapshot, .ack, .reject, .error, .update, .synced:
      statistics.unknownCommands += 1
      reply(.error(code: .unknownCommand, message: "not a request", key: nil, write: nil))
    }
  }

  /// Takes what other brokers of the cluster wrote and publishes it to this broker's subscribers.
  func absorbClusterChanges(output: (Output) -> Void) {
    store.absorbClusterChanges()
    publishClusterUpdates(output)
  }

  private func publishClusterUpdates(_ output: (Output) -> Void) {
    let updates = store.takeClusterUpdates()
    guard !updates.isEmpty else { return }
    statistics.keys = store.entries.count
    for update in updates { output(.publish(update)) }
  }

  private func snapshot(key: String, client: String) -> BrokerMessage {
    let snapshot = store.snapshot(key: key, client: client)
    return .snapshot(
      key: key, version: snapshot.version, lastWrite: snapshot.lastWrite, value: snapshot.value,
      writes: snapshot.writes)
  }

  /// Decides on a client's copy of a key: adopted when the broker may still take copies of the
  /// key and this one is the newest; returns the update that publishes an adopted copy. A copy
  /// confirmed under this very instance is never newer.
  private func seed(
    client: String, key: String, origin: BrokerStore.SeedOrigin, value: Data,
    writes: [String: UInt64]
  ) throws -> BrokerMessage? {
    // A copy over the value limit (a broker restarted with a smaller one) is not adopted; the
    // client takes the broker's state instead, as for any refused copy.
    let fits = value.count <= maxValueSize
    if !fits { statistics.oversized += 1 }
    guard fits, origin.instance != instance,
      let version = try store.seed(
        client: client, key: key, origin: origin, value: value, writes: writes)
    else { return nil }
    statistics.seedsAdopted += 1
    statistics.keys = store.entries.count
    logger.info(
      "Adopted a client's copy",
      metadata: ["key": "\(key)", "origin": "\(origin.instance)", "version": "\(origin.version)"]
    )
    return .update(key: key, version: version, client: client, write: 0, value: value)
  }
}
