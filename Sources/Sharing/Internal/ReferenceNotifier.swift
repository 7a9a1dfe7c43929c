import Foundation
internal import IssueReporting
package import OpenCombine

/// Delivers a reference's changes: to its publisher's subscribers and to every store that may
/// hold it. A runaway chain of nested re-writes (an observer writing the value it was told
/// about, again and again) is reported and cut instead of recursing until the stack overflows.
///
/// Swift's Observation tracks the reference through its ``ObservedChanges``.
package final class ReferenceNotifier<Value>: @unchecked Sendable {
  /// Nested notifications deeper than this are a feedback loop.
  package static var maxDepth: Int { 64 }

  /// The value last notified, under the lock.
  private var current: Value
  /// Made by the first ask for the publisher: sending to a subject no one asked for is a fifth
  /// of what a mirrored update costs its reader.
  private var subject: CurrentValueSubject<Value, Never>?
  private let lock = NSRecursiveLock()
  private var depth = 0
  private let description: @Sendable () -> String
  private let observed = ObservedChanges()

  package init(initialValue: Value, description: @escaping @Sendable () -> String) {
    current = initialValue
    self.description = description
  }

  /// Reports a read of the value to whoever is tracking.
  package func access() {
    observed.access()
  }

  /// The current value, then every change.
  package var publisher: AnyPublisher<Value, Never> {
    lock.lock()
    defer { lock.unlock() }
    if let subject { return subject.eraseToAnyPublisher() }
    let made = CurrentValueSubject<Value, Never>(current)
    subject = made
    return made.eraseToAnyPublisher()
  }

  /// Tells everyone about `latest()`, read under the notification lock so that the last
  /// notification always carries the newest value.
  ///
  /// - Parameters:
  ///   - latest: Reads the current value.
  ///   - onlyTheValue: Nothing but the value can have changed (a write, not a storage report
  ///     that may also clear an error): Observation is then told only if it is another value.
  ///     The publisher still sends every write, as swift-sharing's does.
  package func notify(_ latest: () -> Value, onlyTheValue: Bool = false) {
    notify(
      newer: { value in
        value = latest()
        return true
      }, onlyTheValue: onlyTheValue)
  }

  /// Tells everyone about the value `newer` puts in its argument, under the notification lock;
  /// if it returns `false`, no one (the caller's observers already heard of a newer value). Not
  /// a `Value?` result: unspecialized code asks the runtime for `Optional<Value>`'s metadata,
  /// a slow lookup, on every call.
  package func notify(newer: (inout Value) -> Bool, onlyTheValue: Bool = false) {
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
    var value = current
    guard newer(&value) else { return }
    if !onlyTheValue || !areEqual(current, value) {
      observed.changed()
    }
    current = value
    subject?.send(value)
    SharedChangeSubscription.notifyAll()
  }
}

/// Whether two values are equal, for values that are `Equatable`; others never are.
private func areEqual<T>(_ lhs: T, _ rhs: T) -> Bool {
  guard let lhs = lhs as? any Equatable else { return false }
  return lhs.isEqual(to: rhs)
}

extension Equatable {
  /// Compares the types first: when they are the same, a forced cast asks the runtime for no
  /// `Optional<Self>` metadata, a slow lookup that `as?` makes on every call.
  fileprivate func isEqual<Other>(to other: Other) -> Bool {
    if type(of: other) == Self.self { return self == other as! Self }
    return isEqual(casting: other)
  }

  /// Not inlined: a function that may cast with `as?` asks for the metadata on entry, whichever
  /// way it goes.
  @inline(never)
  private func isEqual<Other>(casting other: Other) -> Bool {
    (other as? Self) == self
  }
}
