import Foundation
import SharedBroker
import SharedBrokerServer
import Sharing
import Synchronization
import ZeroMQ

/// A scripted stand-in for the broker, made of raw sockets: it answers requests with a handler
/// and publishes (or replies) what the test asks, so a test can produce situations the real
/// broker avoids (skipped versions) or hold answers back (writes in flight).
final class FakeBroker: @unchecked Sendable {
  let endpoint: String
  let publisherEndpoint: String
  private let context: Context
  private let router: Socket
  private let publisher: Socket
  private let wakeUp: WakeUpSignal
  private struct State {
    var requests: [BrokerMessage] = []
    var outbox: [BrokerMessage] = []
    var replies: [BrokerMessage] = []
    var lastRequester: Data?
    var stopped = false
  }

  private let state = Mutex(State())
  private let received: AsyncStream<BrokerMessage>.Continuation
  /// Every request, as it arrives.
  let requestStream: AsyncStream<BrokerMessage>
  private let handler: @Sendable (BrokerMessage) -> [BrokerMessage]
  private let finished = DispatchSemaphore(value: 0)

  /// - Parameter handler: Returns the replies (sent back) and updates (published) for a request.
  init(handler: @escaping @Sendable (BrokerMessage) -> [BrokerMessage]) throws {
    context = try Context()
    router = try Socket(context: context, type: .router)
    publisher = try Socket(context: context, type: .pub)
    try router.bind("tcp://127.0.0.1:*")
    try publisher.bind("tcp://127.0.0.1:*")
    endpoint = try router.lastEndpoint
    publisherEndpoint = try publisher.lastEndpoint
    wakeUp = try WakeUpSignal()
    self.handler = handler
    (requestStream, received) = AsyncStream.makeStream()
    let thread = Thread { [self] in serve() }
    thread.start()
  }

  /// Every request received so far.
  var requests: [BrokerMessage] { state.withLock { $0.requests } }

  /// Publishes a message on the PUB socket.
  func publish(_ message: BrokerMessage) {
    state.withLock { $0.outbox.append(message) }
    wakeUp.signal()
  }

  /// Sends a reply to the client that sent the last request.
  func reply(_ message: BrokerMessage) {
    state.withLock { $0.replies.append(message) }
    wakeUp.signal()
  }

  func stop() {
    state.withLock { $0.stopped = true }
    wakeUp.signal()
    finished.wait()
    received.finish()
    context.terminate()
  }

  private func serve() {
    defer {
      router.close()
      publisher.close()
      finished.signal()
    }
    var poller = Poller()
    guard let routerIndex = try? poller.add(router) else { return }
    _ = poller.add(fileDescriptor: wakeUp.fileDescriptor)
    while true {
      guard let ready = try? poller.poll(timeout: .milliseconds(100)) else { return }
      wakeUp.clear()
      let (outbox, replies, requester, stopped) = state.withLock { state in
        defer { (state.outbox, state.replies) = ([], []) }
        return (state.outbox, state.replies, state.lastRequester, state.stopped)
      }
      if stopped { return }
      for message in outbox { _ = try? publisher.send(message.frames) }
      if let requester {
        for message in replies { _ = try? router.send([requester] + message.frames) }
      }
      guard ready.contains(routerIndex) else { continue }
      while let frames = try? router.receive(dontWait: true), frames.count > 1 {
        guard let request = try? BrokerMessage(frames: Array(frames.dropFirst())) else { continue }
        state.withLock {
          $0.requests.append(request)
          $0.lastRequester = frames[0]
        }
        received.yield(request)
        for response in handler(request) {
          switch response {
          case .update, .synced: _ = try? publisher.send(response.frames)
          default: _ = try? router.send([frames[0]] + response.frames)
          }
        }
      }
    }
  }
}

/// A write a ``FakeBroker`` received, with its value as text.
struct HeldWrite: Sendable {
  let id: UInt64
  let base: UInt64
  let value: String
  let after: UInt64?
}

extension FakeBroker {
  /// A broker that welcomes clients, syncs every key and snapshots it at version 1 with the
  /// value `0`, but leaves writes unanswered for the test to answer (``reply(_:)``).
  ///
  /// - Parameter answer: Answers a request in its own way first, where it returns replies.
  static func holdingWrites(
    answer: @escaping @Sendable (BrokerMessage) -> [BrokerMessage]? = { _ in nil }
  ) throws -> FakeBroker {
    let publisherEndpoint = Mutex("")
    let broker = try FakeBroker { request in
      if let replies = answer(request) { return replies }
      return switch request {
      case .hello: [.welcome(instance: "fake", publisher: publisherEndpoint.withLock { $0 })]
      case .ping: [.pong(instance: "fake")]
      case let .sync(client, key): [.synced(key: key, client: client)]
      case let .get(_, key): [.snapshot(key: key, version: 1, lastWrite: 0, value: Data("0".utf8))]
      default: []
      }
    }
    publisherEndpoint.withLock { $0 = broker.publisherEndpoint }
    return broker
  }

  /// The writes received from now on, in order.
  var writes: AsyncCompactMapSequence<AsyncStream<BrokerMessage>, HeldWrite>.Iterator {
    requestStream.compactMap { request in
      if case let .write(_, id, _, base, value, after, _) = request {
        HeldWrite(id: id, base: base, value: String(decoding: value, as: UTF8.self), after: after)
      } else {
        nil
      }
    }.makeAsyncIterator()
  }
}

/// Runs `body` with a ``FakeBroker/holdingWrites()`` broker and a connected, synced client that
/// shares `count` (0 at version 1), then stops both.
func withHeldWritesClient(
  configuration: BrokerClient.Configuration = .init(),
  _ body: (
    _ broker: FakeBroker, _ client: BrokerClient, _ count: Shared<Int>,
    _ writes: inout AsyncCompactMapSequence<AsyncStream<BrokerMessage>, HeldWrite>.Iterator
  ) async throws -> Void
) async throws {
  let broker = try FakeBroker.holdingWrites()
  defer { broker.stop() }
  var writes = broker.writes
  let client = BrokerClient(endpoint: broker.endpoint, configuration: configuration)
  defer { client.close() }
  let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
  try await client.waitUntilConnected()
  try await body(broker, client, count, &writes)
}
