/// A moment on the continuous clock, as the client's machines keep time: how long after a fixed
/// origin it is. `ContinuousClock.Instant`'s layout is opaque outside the concurrency library, so
/// an enum, optional or array element holding one (a key's phase, its events, its deadline) is
/// copied, switched on and destroyed through runtime metadata, some 250 instructions each time;
/// a `Duration` is two integers.
struct Moment: Comparable, Sendable {
  private var sinceOrigin: Duration

  private init(sinceOrigin: Duration) {
    self.sinceOrigin = sinceOrigin
  }

  /// The moment `instant` is.
  init(_ instant: ContinuousClock.Instant) {
    sinceOrigin = Self.origin.duration(to: instant)
  }

  /// The moment it is now.
  static var now: Moment { Moment(.now) }

  private static let origin = ContinuousClock.now

  static func + (moment: Moment, duration: Duration) -> Moment {
    Moment(sinceOrigin: moment.sinceOrigin + duration)
  }

  static func - (moment: Moment, duration: Duration) -> Moment {
    Moment(sinceOrigin: moment.sinceOrigin - duration)
  }

  static func - (later: Moment, earlier: Moment) -> Duration {
    later.sinceOrigin - earlier.sinceOrigin
  }

  static func < (earlier: Moment, later: Moment) -> Bool {
    earlier.sinceOrigin < later.sinceOrigin
  }
}
