import Dependencies
import Foundation
import SharedBroker
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

/// Sends raw frames to the broker from a connection of their own and returns its reply.
func exchange(_ frames: [Data], with endpoint: String) throws -> [Data]? {
  let context = try Context()
  defer { context.terminate() }
  let socket = try Socket(context: context, type: .dealer)
  defer { socket.close() }
  try socket.set(.receiveTimeout, 5_000)
  try socket.connect(endpoint)
  try socket.send(frames)
  return try socket.receive()
}
