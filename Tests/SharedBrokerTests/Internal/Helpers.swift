import Dependencies
import Foundation
import SharedBroker
import Sharing

struct Stats: Codable, Equatable, Sendable {
  var count = 0
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
