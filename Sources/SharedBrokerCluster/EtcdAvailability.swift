/// Whether etcd's quorum answers, decided by the clock from the probes' questions and answers.
///
/// A probe goes out every half second without waiting for the one before: a question that no
/// member answers takes the request timeout on each member, so waiting for answers would put the
/// verdict seconds late. Etcd counts as unavailable once no question sent within the last
/// `unavailableAfter` was answered, whatever is still in flight, and as available again once one
/// is. A value: events go in with their time, and a ``Change`` comes out when the
/// verdict turns; the store around it sends the probes, logs and tells the broker.
struct EtcdAvailability {
  /// The verdict turned.
  enum Change: Equatable {
    /// Etcd answers again.
    case available
    /// No question sent within `unavailableAfter` was answered; `reason` is the last failure,
    /// if a question failed rather than went unanswered.
    case unavailable(reason: String?)
  }

  /// How long etcd may go without answering a question before it counts as unavailable.
  let unavailableAfter: Duration
  private(set) var isAvailable = true
  /// When the newest question etcd answered was sent.
  private var lastAnswered: ContinuousClock.Instant
  private var lastFailure: String?

  /// Available, as if a question sent at `now` had been answered.
  init(unavailableAfter: Duration, now: ContinuousClock.Instant) {
    self.unavailableAfter = unavailableAfter
    lastAnswered = now
  }

  /// Etcd answered the question sent at `sent`.
  mutating func answered(sentAt sent: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Change? {
    lastAnswered = max(lastAnswered, sent)
    lastFailure = nil
    return decide(at: now)
  }

  /// A question failed (etcd refused it, or no member answered in time).
  mutating func failed(_ reason: String, now: ContinuousClock.Instant) -> Change? {
    lastFailure = reason
    return decide(at: now)
  }

  /// The clock moved on: a question may now have gone unanswered too long.
  mutating func tick(now: ContinuousClock.Instant) -> Change? {
    decide(at: now)
  }

  private mutating func decide(at now: ContinuousClock.Instant) -> Change? {
    let available = now - lastAnswered < unavailableAfter
    defer { isAvailable = available }
    guard available != isAvailable else { return nil }
    return available ? .available : .unavailable(reason: lastFailure)
  }
}
