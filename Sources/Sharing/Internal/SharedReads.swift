/// The shared values a view read while it ran, and how many changes each had been told of
/// then.
///
/// Swift's Observation installs a view's tracking only once the view has run: a change another
/// thread tells in between reaches nobody, and the view would stay on what it read. A view
/// that records its reads can tell afterwards whether one of them changed meanwhile.
package final class SharedReads: @unchecked Sendable {
  @TaskLocal static var current: SharedReads?

  /// Only touched by the thread that runs the recorded body.
  private var seen: [(changes: ObservedChanges, count: UInt64)] = []

  /// Runs `body`, recording the shared values it reads.
  package static func recording(_ body: () throws -> Void) rethrows -> SharedReads {
    let reads = SharedReads()
    try $current.withValue(reads) { try body() }
    return reads
  }

  /// Whether a value read was told of a change since it was read.
  package var changedSinceRead: Bool {
    seen.contains { $0.changes.count != $0.count }
  }

  func note(_ changes: ObservedChanges) {
    seen.append((changes, changes.count))
  }
}
