/// A small seeded random number generator (SplitMix64): the same seed gives the same run.
struct SplitMix64: RandomNumberGenerator {
  private var state: UInt64

  init(seed: UInt64) {
    state = seed
  }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

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
