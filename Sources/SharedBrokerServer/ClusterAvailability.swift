/// Whether a cluster's store (etcd's quorum) answers, decided by the clock from the probes'
/// questions and answers.
///
/// A probe goes out every half second without waiting for the one before: a question that no
/// member answers takes the request timeout on each member, so waiting for answers would put the
/// verdict seconds late. The store counts as unavailable once no question sent within the last
/// `unavailableAfter` was answered, whatever is still in flight, and as available again once one
/// is. A value: events go in with their time, and a ``Change`` comes out when the
/// verdict turns; the store that holds it sends the probes, logs and tells the broker.
package struct ClusterAvailability: Sendable {
  /// The verdict turned.
  package enum Change: Equatable, Sendable {
    /// The store answers again.
    case available
    /// No question sent within `unavailableAfter` was answered; `reason` is the last failure,
    /// if a question failed rather than went unanswered.
    case unavailable(reason: String?)
  }

  /// How long the store may go without answering a question before it counts as unavailable.
  package let unavailableAfter: Duration
  package private(set) var isAvailable = true
  /// When the newest question the store answered was sent.
  private var lastAnswered: ContinuousClock.Instant
  private var lastFailure: String?

  /// Available, as if a question sent at `now` had been answered.
  package init(unavailableAfter: Duration, now: ContinuousClock.Instant) {
    self.unavailableAfter = unavailableAfter
    lastAnswered = now
  }

  /// The store answered the question sent at `sent`.
  package mutating func answered(sentAt sent: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Change? {
    lastAnswered = max(lastAnswered, sent)
    lastFailure = nil
    return decide(at: now)
  }

  /// A question failed (the store refused it, or no member answered in time).
  package mutating func failed(_ reason: String, now: ContinuousClock.Instant) -> Change? {
    lastFailure = reason
    return decide(at: now)
  }

  /// The clock moved on: a question may now have gone unanswered too long.
  package mutating func tick(now: ContinuousClock.Instant) -> Change? {
    decide(at: now)
  }

  private mutating func decide(at now: ContinuousClock.Instant) -> Change? {
    let available = now - lastAnswered < unavailableAfter
    defer { isAvailable = available }
    guard available != isAvailable else { return nil }
    return available ? .available : .unavailable(reason: lastFailure)
  }
}
