import Synchronization
internal import Observation

/// What Swift's Observation tracks for a shared reference: a read registers ``changes``, and
/// every notification changes it.
///
/// Not generic, so `\.changes` is one key path made once: in a generic class the literal is
/// formed anew at every use, about 10,000 instructions, a fifth of a reader's work per update.
final class ObservedChanges: Observable, Sendable {
  private let registrar = ObservationRegistrar()
  /// Nobody can be tracking a value that nobody read: the registrar is skipped until then.
  private let read = Atomic<Bool>(false)
  /// How many notifications Observation was given, which a ``SharedReads`` compares.
  private let told = Atomic<UInt64>(0)

  /// Changes with every notification that changes something.
  var changes: Void { () }

  /// How many notifications Observation was given so far.
  var count: UInt64 { told.load(ordering: .acquiring) }

  /// Reports a read of the value to whoever is tracking.
  func access() {
    if !read.load(ordering: .relaxed) { read.store(true, ordering: .releasing) }
    SharedReads.current?.note(self)
    registrar.access(self, keyPath: \.changes)
  }

  /// Tells whoever tracks a read of the value that it changed.
  func changed() {
    guard read.load(ordering: .acquiring) else { return }
    told.add(1, ordering: .releasing)
    registrar.withMutation(of: self, keyPath: \.changes) {}
  }
}
