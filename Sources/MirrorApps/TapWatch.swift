import Observation
import SharedBroker

/// Whether taps have waited for the broker's confirmation for longer than a second. A client
/// notices a dead broker only once its heartbeats go unanswered, and until then its connection
/// still reads `connected`: the screen shows the waiting taps from this instead. It waits on
/// the client's confirmations (no polling), and only while taps are unconfirmed.
@MainActor @Observable
final class TapWatch {
  /// Some taps have waited for longer than ``patience``.
  private(set) var late = false
  /// How long a tap may wait before the screen says so: confirmations take a round trip.
  static let patience = Duration.seconds(1)
  @ObservationIgnored private var watching: Task<Void, Never>?

  /// Starts following `client`'s confirmations if taps wait and nothing follows them yet.
  func follow(_ client: BrokerClient) {
    guard watching == nil, client.unconfirmedWriteCount > 0 else { return }
    watching = Task { @MainActor [weak self] in
      while client.unconfirmedWriteCount > 0, client.connectionState != .refused {
        guard (try? await client.waitUntilConfirmed(timeout: Self.patience)) == nil else { break }
        self?.late = true
      }
      self?.late = false
      self?.watching = nil
    }
  }

  func cancel() {
    watching?.cancel()
  }
}
