import Foundation
internal import IssueReporting
package import OpenCombine

/// Delivers a reference's changes: to its publisher's subscribers and to every store that may
/// hold it.
///
/// No lock is held while anyone is told, and no caller waits for another thread's delivery:
/// each change is handed in with a stamp that orders it, and one thread at a time (the first
/// that finds nobody delivering) tells everyone about the newest one, then about any newer one
/// handed in meanwhile, so everyone hears the changes in stamp order and last hears the newest.
/// A change handed in while another thread delivers is told by that thread, right after.
/// Inside a shared value's lock (a ``LockedRegion``) the delivery waits until the thread
/// leaves it.
///
/// A change an observer makes while it is being told is told after it returns (every observer
/// hears one value before the next); a runaway chain of them (an observer writing the value it
/// was told about, again and again) is reported and cut instead of looping forever.
///
/// Swift's Observation tracks the reference through its ``ObservedChanges``.
package final class ReferenceNotifier<Value>: @unchecked Sendable {
  /// Changes made by the delivering thread's own observers, in a row, beyond which they are a
  /// feedback loop.
  package static var maxDepth: Int { 64 }

  private struct State {
    /// The value last told.
    var current: Value
    /// Made by the first ask for the publisher: sending to a subject no one asked for is a
    /// fifth of what a mirrored update costs its reader.
    var subject: CurrentValueSubject<Value, Never>?
    /// The newest change not told yet, when `hasNext` (not an `Optional`: unspecialized code
    /// asks the runtime for `Optional<Value>`'s metadata, a slow lookup, on every call).
    var next: Value
    var hasNext = false
    /// Nothing but the value changed in every change `next` stands for.
    var nextOnlyTheValue = true
    /// The newest stamp handed in.
    var stamp: UInt64 = 0
    /// The thread telling everyone now, if any.
    var deliverer: pthread_t?
    /// The delivering thread handed in `next` itself (one of its observers wrote the value).
    var nextIsOwn = false
  }

  /// A leaf lock: nothing is called under it.
  private let lock = NSLock()
  private var state: State
  private let description: @Sendable () -> String
  private let observed = ObservedChanges()

  package init(initialValue: Value, description: @escaping @Sendable () -> String) {
    state = State(current: initialValue, next: initialValue)
    self.description = description
  }

  /// Reports a read of the value to whoever is tracking.
  package func access() {
    observed.access()
  }

  /// The current value, then every change.
  package var publisher: AnyPublisher<Value, Never> {
    withState { state in
      if let subject = state.subject { return subject.eraseToAnyPublisher() }
      let made = CurrentValueSubject<Value, Never>(state.current)
      state.subject = made
      return made.eraseToAnyPublisher()
    }
  }

  /// Tells everyone about `value`, unless they heard of a newer one (a higher `stamp`).
  ///
  /// - Parameters:
  ///   - value: The reference's value as of `stamp`.
  ///   - stamp: Grows with every change of the reference (its value or its errors).
  ///   - onlyTheValue: Nothing but the value can have changed (a write, not a storage report
  ///     that may also clear an error): Observation is then told only if it is another value.
  ///     The publisher still sends every write, as swift-sharing's does.
  package func notify(_ value: Value, stamp: UInt64, onlyTheValue: Bool = false) {
    let me = pthread_self()
    let heldBack = LockedRegion.isActive
    let outcome = withState { state -> HandIn in
      guard stamp > state.stamp else { return .stale }
      state.stamp = stamp
      state.nextOnlyTheValue = (state.hasNext ? state.nextOnlyTheValue : true) && onlyTheValue
      state.next = value
      state.hasNext = true
      if let deliverer = state.deliverer {
        if pthread_equal(deliverer, me) != 0 { state.nextIsOwn = true }
        return .toldByDeliverer
      }
      if heldBack { return .heldBack }
      state.deliverer = me
      return .claimed
    }
    switch outcome {
    case .claimed: deliver()
    case .heldBack: LockedRegion.holdBack { [self] in claimAndDeliver() }
    case .stale, .toldByDeliverer: break
    }
  }

  /// What became of a change handed in.
  private enum HandIn {
    /// Observers heard of a newer one already.
    case stale
    /// The thread delivering now tells it.
    case toldByDeliverer
    /// This thread is in a ``LockedRegion``: it tells it when it leaves.
    case heldBack
    /// This thread delivers it, now.
    case claimed
  }

  /// Tells everyone about the changes handed in, unless another thread is at it.
  private func claimAndDeliver() {
    let me = pthread_self()
    let claimed = withState { state -> Bool in
      guard state.deliverer == nil, state.hasNext else { return false }
      state.deliverer = me
      return true
    }
    if claimed { deliver() }
  }

  /// Tells everyone about the changes handed in, newest first then any newer, as the thread
  /// that claimed the delivery, until none is left.
  private func deliver() {
    var ownInARow = 0
    while let delivery = takeNext() {
      ownInARow = delivery.isOwn ? ownInARow + 1 : 0
      if ownInARow > Self.maxDepth {
        reportFeedbackLoop()
        // What the loop would write next is dropped: it ends here.
        withState { state in
          state.hasNext = false
          state.deliverer = nil
        }
        return
      }
      if !delivery.onlyTheValue || !areEqual(delivery.previous, delivery.value) {
        observed.changed()
      }
      delivery.subject?.send(delivery.value)
      SharedChangeSubscription.notifyAll()
    }
  }

  /// One change to tell, taken from the state.
  private struct Delivery {
    let previous: Value
    let value: Value
    let onlyTheValue: Bool
    /// The delivering thread's own observers made it.
    let isOwn: Bool
    let subject: CurrentValueSubject<Value, Never>?
  }

  /// Takes the change to tell next, as the value last told; `nil` (and nobody delivering) when
  /// there is none.
  private func takeNext() -> Delivery? {
    withState { state in
      guard state.hasNext else {
        state.deliverer = nil
        return nil
      }
      let delivery = Delivery(
        previous: state.current, value: state.next, onlyTheValue: state.nextOnlyTheValue,
        isOwn: state.nextIsOwn, subject: state.subject)
      state.hasNext = false
      state.nextIsOwn = false
      state.current = state.next
      return delivery
    }
  }

  private func withState<R>(_ body: (inout State) -> R) -> R {
    lock.lock()
    defer { lock.unlock() }
    return body(&state)
  }

  private func reportFeedbackLoop() {
    reportIssue(
      """
      Feedback loop detected on \(description()): it was written \(Self.maxDepth) times in a \
      row by observers of its own changes.

      Writing a shared value from its own publisher (or from an action that its publisher \
      sends) loops forever. Derive the new value in the reducer that makes the change instead.
      """
    )
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
