import TestSupport

extension SplitMix64 {
  /// True with probability `p`.
  mutating func chance(_ p: Double) -> Bool {
    p > 0 && Double.random(in: 0..<1, using: &self) < p
  }

  /// A duration between `low` and `high`, in whole microseconds.
  mutating func duration(_ low: Duration, _ high: Duration) -> Duration {
    let micros = Int64.random(in: low.microseconds...high.microseconds, using: &self)
    return .microseconds(micros)
  }
}

extension Duration {
  var microseconds: Int64 {
    let (seconds, attoseconds) = components
    return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
  }
}
