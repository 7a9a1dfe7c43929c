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

  /// A leaf lock around the properties below: nothing is called under it. They are this
  /// class's own rather than a nested struct's, and the bookkeeping is a type of the file's:
  /// a type nested in a generic class is generic too, and code not specialized for `Value`
  /// looks its metadata up in the runtime's cache on every use, several times per change.
  /// The lock makes every access exclusive, so they go without the run-time exclusivity check
  /// (some 80 instructions per access, six per change).
  private let lock = NSLock()
  /// The value last told.
  @exclusivity(unchecked) private var current: Value
  /// The newest change not told yet, when `progress.hasNext` (not an `Optional`, for the same
  /// reason: `Optional<Value>`'s metadata is looked up on every use).
  @exclusivity(unchecked) private var next: Value
  /// Made by the first ask for the publisher: sending to a subject no one asked for is a
  /// fifth of what a mirrored update costs its reader.
  @exclusivity(unchecked) private var subject: CurrentValueSubject<Value, Never>?
  @exclusivity(unchecked) private var progress = DeliveryProgress()
  private let description: @Sendable () -> String
  private let observed = ObservedChanges()

  package init(initialValue: Value, description: @escaping @Sendable () -> String) {
    current = initialValue
    next = initialValue
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
    lock.lock()
    let outcome = progress.handIn(
      stamp: stamp, onlyTheValue: onlyTheValue, by: me, heldBack: heldBack)
    if outcome != .stale { next = value }
    lock.unlock()
    switch outcome {
    case .claimed: deliver()
    case .heldBack: LockedRegion.holdBack { [self] in claimAndDeliver() }
    case .stale, .toldByDeliverer: break
    }
  }

  /// Tells everyone about the changes handed in, unless another thread is at it.
  private func claimAndDeliver() {
    let me = pthread_self()
    lock.lock()
    let claimed = progress.claim(by: me)
    lock.unlock()
    if claimed { deliver() }
  }

  /// Tells everyone about the changes handed in, newest first then any newer, as the thread
  /// that claimed the delivery, until none is left.
  private func deliver() {
    var ownInARow = 0
    while true {
      lock.lock()
      guard let taken = progress.take() else {
        lock.unlock()
        return
      }
      let previous = current
      let value = next
      let subject = self.subject
      current = value
      lock.unlock()
      ownInARow = taken.isOwn ? ownInARow + 1 : 0
      if ownInARow > Self.maxDepth {
        reportFeedbackLoop()
        // What the loop would write next is dropped: it ends here.
        lock.lock()
        progress.drop()
        lock.unlock()
        return
      }
      if !taken.onlyTheValue || !areEqual(previous, value) {
        observed.changed()
      }
      subject?.send(value)
      SharedChangeSubscription.notifyAll()
    }
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

/// What a ``ReferenceNotifier`` knows of its changes besides their values: whether one awaits
/// delivery, its stamp, and who delivers.
private struct DeliveryProgress {
  /// What became of a change handed in.
  enum HandIn {
    /// Observers heard of a newer one already.
    case stale
    /// The thread delivering now tells it.
    case toldByDeliverer
    /// This thread is in a ``LockedRegion``: it tells it when it leaves.
    case heldBack
    /// This thread delivers it, now.
    case claimed
  }

  /// One change to tell, taken.
  struct Taken {
    let onlyTheValue: Bool
    /// The delivering thread's own observers made it.
    let isOwn: Bool
  }

  /// A change awaits delivery.
  var hasNext = false
  /// Nothing but the value changed in every change the one awaiting stands for.
  var nextOnlyTheValue = true
  /// The newest stamp handed in.
  var stamp: UInt64 = 0
  /// The thread telling everyone now, if any.
  var deliverer: pthread_t?
  /// The delivering thread handed in the change awaiting itself (one of its observers wrote).
  var nextIsOwn = false

  /// Takes in a change with `stamp` from the thread `me` (the caller stores its value unless
  /// it is stale).
  mutating func handIn(stamp: UInt64, onlyTheValue: Bool, by me: pthread_t, heldBack: Bool)
    -> HandIn
  {
    guard stamp > self.stamp else { return .stale }
    self.stamp = stamp
    nextOnlyTheValue = (hasNext ? nextOnlyTheValue : true) && onlyTheValue
    hasNext = true
    if let deliverer {
      if pthread_equal(deliverer, me) != 0 { nextIsOwn = true }
      return .toldByDeliverer
    }
    if heldBack { return .heldBack }
    deliverer = me
    return .claimed
  }

  /// Makes `me` the deliverer if nobody delivers and a change awaits.
  mutating func claim(by me: pthread_t) -> Bool {
    guard deliverer == nil, hasNext else { return false }
    deliverer = me
    return true
  }

  /// The change to tell next (the caller takes its value); `nil`, and nobody delivering, when
  /// there is none.
  mutating func take() -> Taken? {
    guard hasNext else {
      deliverer = nil
      return nil
    }
    defer {
      hasNext = false
      nextIsOwn = false
    }
    return Taken(onlyTheValue: nextOnlyTheValue, isOwn: nextIsOwn)
  }

  /// Drops the change awaiting and ends the delivery.
  mutating func drop() {
    hasNext = false
    deliverer = nil
  }
}

/// Whether two values are equal, for values that are `Equatable`; others never are.
private func areEqual<T>(_ lhs: T, _ rhs: T) -> Bool {
  guard let lhs = lhs as? any Equatable else { return false }
  return lhs.isEqual(to: rhs)
}

extension Equatable {
  /// Compares the types first: when they are the same, the other value is taken as `Self`
  /// without the runtime's casts (`as?` also looks up `Optional<Self>`'s metadata every call).
  fileprivate func isEqual<Other>(to other: Other) -> Bool {
    if type(of: other) == Self.self { return self == identityCast(other, to: Self.self) }
    return isEqual(casting: other)
  }

  /// Not inlined: a function that may cast with `as?` asks for the metadata on entry, whichever
  /// way it goes.
  @inline(never)
  private func isEqual<Other>(casting other: Other) -> Bool {
    (other as? Self) == self
  }
}
