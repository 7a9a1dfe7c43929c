import Foundation

/// What the ``ClientStateMachine`` needs of one key, whatever its value type: the key's
/// ``KeyStateMachine``, in its ``KeySlot``.
protocol BrokerChannel: AnyObject {
  var key: String { get }
  /// Mutations the broker has not confirmed.
  var hasUnconfirmedWrites: Bool { get }
  /// How many mutations the broker has not confirmed.
  var unconfirmedWriteCount: Int { get }
  /// In sync with the broker the client is connected to.
  var isSynced: Bool { get }
  /// The confirmed version, for a `PING`, while in sync.
  var heldVersion: UInt64? { get }
  /// Feeds the key's state machine.
  func handle(_ event: KeyEvent) -> KeyOutput
  /// Applies the updates received since the last call; returns whether observers must be told.
  /// The machine calls it after each batch the loop read, so a burst costs one decode.
  func deliverUpdates() -> Bool
  /// Forgets being in sync until the next snapshot (an explicit reload).
  func markStale()
}
