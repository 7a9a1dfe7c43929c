import Foundation

/// What the client's I/O loop needs from the reference of one key, whatever its value type: its
/// ``KeyStateMachine``, reached under the reference's lock.
protocol BrokerChannel: AnyObject, Sendable {
  var key: String { get }
  /// Mutations the broker has not confirmed.
  var hasUnconfirmedWrites: Bool { get }
  /// How many mutations the broker has not confirmed.
  var unconfirmedWriteCount: Int { get }
  /// In sync with the broker the client is connected to.
  var isSynced: Bool { get }
  /// The confirmed version, for a `PING`, while in sync.
  var heldVersion: UInt64? { get }
  /// Feeds the key's state machine; observers hear of a changed value.
  func handle(_ event: KeyEvent) -> KeyOutput
  /// Applies the updates received since the last call and tells observers, once: the loop calls
  /// it after each batch it read, so a burst costs one decode and one notification.
  func deliverUpdates()
  /// Forgets being in sync until the next snapshot (an explicit reload).
  func markStale()
}
