import Foundation

/// Lets a test store assert `@Shared` mutations like any other state change.
///
/// A shared value is a reference, so the "state before" copy that a test store keeps would see
/// every mutation too. While a tracker is current, the first mutation of a reference records a
/// snapshot of its old value. While the tracker asserts, reads return the snapshot and writes go
/// to it, so the expected state is built from the old value and compared with the live one.
package final class SharedChangeTracker: @unchecked Sendable {
  @TaskLocal package static var current: SharedChangeTracker?
  @TaskLocal package static var isAsserting = false

  private let lock = NSLock()
  private var snapshots: [ObjectIdentifier: (reference: AnyObject, value: Any)] = [:]

  package init() {}

  /// Runs `body` with this tracker recording snapshots.
  package func track<R>(_ body: () throws -> R) rethrows -> R {
    try Self.$current.withValue(self, operation: body)
  }

  /// Runs `body` reading and writing snapshots instead of live values.
  package func asserting<R>(_ body: () throws -> R) rethrows -> R {
    try Self.$current.withValue(self) {
      try Self.$isAsserting.withValue(true, operation: body)
    }
  }

  /// Forgets every snapshot: the live values are now the asserted ones.
  package func resetSnapshots() {
    lock.withLock { snapshots.removeAll() }
  }

  /// Whether any reference changed since the last reset.
  package var hasChanges: Bool {
    lock.withLock { !snapshots.isEmpty }
  }

  package func recordOldValue<Value>(_ value: Value, of reference: AnyObject) {
    lock.withLock {
      let id = ObjectIdentifier(reference)
      if snapshots[id] == nil { snapshots[id] = (reference, value) }
    }
  }

  package func snapshot<Value>(of reference: AnyObject, as _: Value.Type) -> Value? {
    lock.withLock { snapshots[ObjectIdentifier(reference)]?.value as? Value }
  }

  package func updateSnapshot<Value, R>(
    of reference: AnyObject, live: Value, _ body: (inout Value) throws -> R
  ) rethrows -> R {
    try lock.withLock {
      let id = ObjectIdentifier(reference)
      var value = snapshots[id]?.value as? Value ?? live
      let result = try body(&value)
      snapshots[id] = (reference, value)
      return result
    }
  }
}
