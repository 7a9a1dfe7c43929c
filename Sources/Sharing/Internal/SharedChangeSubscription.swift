import Synchronization

/// Hears about every change of every shared value in the process.
///
/// Stores use it to re-check their observers when a `@Shared` value in their state changes
/// outside their reducer; observers skip duplicates, so a change elsewhere costs one comparison.
package final class SharedChangeSubscription: Sendable {
  private static let observers = Mutex<[ObjectIdentifier: @Sendable () -> Void]>([:])

  /// Starts listening; stops when released.
  package init(_ onChange: @escaping @Sendable () -> Void) {
    let id = ObjectIdentifier(self)
    Self.observers.withLock { $0[id] = onChange }
  }

  deinit {
    let id = ObjectIdentifier(self)
    _ = Self.observers.withLock { $0.removeValue(forKey: id) }
  }

  static func notifyAll() {
    let observers = Self.observers.withLock { Array($0.values) }
    for observer in observers { observer() }
  }
}
