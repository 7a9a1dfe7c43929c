import Dependencies
import Foundation
import SharedBroker
import SharedBrokerServer
import Sharing
import ZeroMQ

struct Stats: Codable, Equatable, Sendable {
  var count = 0
  var numberOfCounts = 0
}

/// The value the benchmarks write (`Benchmarks/`), used by the JSON codec tests.
struct BenchmarkValue: Codable, Equatable, Sendable {
  var count = 0
  var maxCount = 0
  var minCount = 0
  var numberOfCounts = 0
}

/// Runs `body` as if in a process of its own: its `.broker` keys go through `client`, and it has
/// its own cache of references.
func inProcess<R>(
  _ client: BrokerClient, _ body: () async throws -> R
) async rethrows -> R {
  try await withDependencies {
    $0.brokerClient = client
    $0.persistentReferences = PersistentReferences()
  } operation: {
    try await body()
  }
}

/// The first value of `stream` that satisfies `condition`.
func firstValue<T: Sendable>(
  in stream: AsyncStream<T>, where condition: (T) -> Bool
) async -> T? {
  for await value in stream where condition(value) { return value }
  return nil
}

/// A connection to the broker driven by hand, as a client in another language would.
final class RawClient {
  let context: Context
  let socket: Socket
  /// The SUB socket ``hello(as:subscribingTo:)`` connected.
  private(set) var subscriber: Socket?
  private let endpoint: String

  /// Connects and, given a client id, says `HELLO` as that client and waits for `WELCOME`.
  init(_ endpoint: String, hello client: String?) throws {
    self.endpoint = endpoint
    context = try Context()
    socket = try Socket(context: context, type: .dealer)
    try socket.set(.receiveTimeout, 5_000)
    try socket.connect(endpoint)
    if let client {
      guard case .welcome = try request(.hello(client: client)) else { throw RawClientError.noWelcome }
    }
  }

  deinit {
    subscriber?.close()
    socket.close()
    context.terminate()
  }

  /// Says `HELLO` as `client` and connects ``subscriber``, subscribed to `key`, to the publisher
  /// the `WELCOME` names. Returns the `WELCOME`'s instance.
  @discardableResult
  func hello(as client: String, subscribingTo key: String) throws -> String {
    guard case .welcome(let instance, let announced, _, _, _)? = try request(.hello(client: client))
    else { throw RawClientError.noWelcome }
    let subscriber = try Socket(context: context, type: .sub)
    self.subscriber = subscriber
    try subscriber.set(.subscribe, Array(BrokerMessage.topic(of: key)))
    try subscriber.connect(BrokerMessage.publisherEndpoint(announced: announced, router: endpoint))
    return instance
  }

  /// Sends `frames` and returns the reply (`nil` after 5 s without one).
  func request(_ frames: [Data]) throws -> [Data]? {
    try socket.send(frames)
    return try socket.receive()
  }

  /// Sends `message` and decodes the reply.
  func request(_ message: BrokerMessage) throws -> BrokerMessage? {
    try request(message.frames).map { try BrokerMessage(frames: $0) }
  }
}

enum RawClientError: Error { case noWelcome }

/// Sends raw frames to the broker from a connection of their own and returns its reply. A
/// request that names a client (`SYNC`, `GET`, `SEED`, `WRITE`) goes after a `HELLO` as that
/// client, unless `hello` is false.
func exchange(_ frames: [Data], with endpoint: String, hello: Bool = true) throws -> [Data]? {
  let named = frames.count >= 2 && ["SYNC", "GET", "SEED", "WRITE"].contains(String(decoding: frames[0], as: UTF8.self))
  let client = try RawClient(endpoint, hello: hello && named ? String(decoding: frames[1], as: UTF8.self) : nil)
  return try client.request(frames)
}
