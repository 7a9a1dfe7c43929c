import Foundation
internal import IssueReporting
internal import Observation
package import OpenCombine

/// Delivers a reference's changes: to its publisher's subscribers and to every store that may
/// hold it. A runaway chain of nested re-writes (an observer writing the value it was told
/// about, again and again) is reported and cut instead of recursing until the stack overflows.
///
/// It is also what Swift's Observation tracks for the reference: a read of the value registers
/// ``changes``, and every notification changes it.
package final class ReferenceNotifier<Value>: @unchecked Sendable, Observable {
  /// Nested notifications deeper than this are a feedback loop.
  package static var maxDepth: Int { 64 }

  private let subject: CurrentValueSubject<Value, Never>
  private let lock = NSRecursiveLock()
  private var depth = 0
  private let description: @Sendable () -> String
  private let registrar = ObservationRegistrar()

  package init(initialValue: Value, description: @escaping @Sendable () -> String) {
    subject = CurrentValueSubject(initialValue)
    self.description = description
  }

  /// What Observation tracks: it changes with every notification.
  package var changes: Void { () }

  /// Reports a read of the value to whoever is tracking.
  package func access() {
    registrar.access(self, keyPath: \.changes)
  }

  /// The current value, then every change.
  package var publisher: AnyPublisher<Value, Never> { subject.eraseToAnyPublisher() }

  /// Tells everyone about `latest()`, read under the notification lock so that the last
  /// notification always carries the newest value.
  package func notify(_ latest: () -> Value) {
    lock.lock()
    defer { lock.unlock() }
    depth += 1
    defer { depth -= 1 }
    guard depth <= Self.maxDepth else {
      if depth == Self.maxDepth + 1 {
        reportIssue(
          """
          Feedback loop detected on \(description()): it was written \(Self.maxDepth) times in \
          a row by observers of its own changes.

          Writing a shared value from its own publisher (or from an action that its publisher \
          sends) loops forever. Derive the new value in the reducer that makes the change \
          instead.
          """
        )
      }
      return
    }
    registrar.withMutation(of: self, keyPath: \.changes) {}
    subject.send(latest())
    SharedChangeSubscription.notifyAll()
  }
}
