import Foundation

/// What the client's I/O thread needs from the reference of one key, whatever its value type.
protocol BrokerChannel: AnyObject, Sendable {
  var key: String { get }
  /// Mutations the broker has not confirmed.
  var hasUnconfirmedWrites: Bool { get }
  /// How many mutations the broker has not confirmed.
  var unconfirmedWriteCount: Int { get }
  /// Whether a snapshot arrived since the last (re)connection.
  var isSynced: Bool { get }
  /// The next compare-and-set to send, covering every mutation no sent write covers yet, if
  /// there is one. `after` is the write it is pipelined behind (`nil`: none is in flight).
  func nextWrite(id: UInt64) -> (base: UInt64, value: Data, after: UInt64?)?
  /// The broker applied write `write` as `version`.
  func receiveAck(write: UInt64, version: UInt64)
  /// The broker's current state (a snapshot, or the answer to a rejected write) on the broker
  /// instance `instance`. From an instance other than the one the confirmed value came from, it
  /// replaces that value whatever its version: versions count per instance.
  func receiveState(version: UInt64, lastWrite: UInt64, value: Data, instance: String)
  /// An update from the PUB socket of the broker instance `instance`; returns whether versions
  /// were skipped (a gap). Ignored until a snapshot from that instance arrived. Its value is
  /// decoded and shown to observers by ``deliverUpdates()``, or sooner if someone reads it.
  func receiveUpdate(
    version: UInt64, fromThisClient: Bool, write: UInt64, value: Data, instance: String
  ) -> Bool
  /// The confirmed version, on the instance it came from.
  var confirmedVersion: UInt64 { get }
  /// The confirmed copy to offer a broker instance other than the one that confirmed it (which
  /// may have lost it): that instance, the version, the value's bytes. `nil` when the copy came
  /// from `instance` itself or nothing was ever confirmed.
  func seedCopy(for instance: String) -> (origin: String, version: UInt64, value: Data)?
  /// Applies the updates received since the last call and tells observers, once: the I/O thread
  /// calls it after each batch it read, so a burst costs one decode and one notification.
  func deliverUpdates()
  /// Forgets being in sync until the next snapshot (an explicit reload).
  func markStale()
  /// The broker did not apply the writes in flight (a storage failure, a value too large, a
  /// broker collecting copies after a restart); they will be retried. `error` is what the
  /// user is told through `saveError`, `nil` for a wait that is part of normal operation.
  func writeFailed(_ error: (any Error)?)
}
