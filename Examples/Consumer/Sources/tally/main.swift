import Composable
import Foundation
import SharedBroker
import Tally

// Taps the shared tally once through the broker at $SHARED_BROKER_URL, waits for the broker to
// confirm it, and prints the count: an app that only mirrors a value, as small as one gets.
let client = BrokerClient(
  endpoint: ProcessInfo.processInfo.environment["SHARED_BROKER_URL"] ?? "tcp://127.0.0.1:5555")
prepareDependencies { $0.brokerClient = client }
let store = Store(initialState: Tally.State()) { Tally() }
store.send(.incrementButtonTapped)
do {
  try await client.waitUntilConfirmed(timeout: .seconds(5))
  print(store.count)
} catch {
  print("tally: \(error)")
  exit(1)
}
