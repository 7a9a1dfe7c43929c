/// The counting statistics that the Counter and Profile features share (the SharedState case study).
public struct Stats: Codable, Equatable, Hashable, Sendable {
  /// The current count.
  public var count = 0
  /// The highest count reached.
  public var maxCount = 0
  /// The lowest count reached.
  public var minCount = 0
  /// How many times + or − was tapped.
  public var numberOfCounts = 0

  /// Creates statistics.
  public init(count: Int = 0, maxCount: Int = 0, minCount: Int = 0, numberOfCounts: Int = 0) {
    self.count = count
    self.maxCount = maxCount
    self.minCount = minCount
    self.numberOfCounts = numberOfCounts
  }

  /// One tap on +. At the ends of `Int` (a value another process wrote) the numbers stay
  /// where they are rather than overflow.
  public mutating func increment() {
    count = Self.step(count, by: 1)
    numberOfCounts = Self.step(numberOfCounts, by: 1)
    maxCount = max(maxCount, count)
  }

  /// One tap on −.
  public mutating func decrement() {
    count = Self.step(count, by: -1)
    numberOfCounts = Self.step(numberOfCounts, by: 1)
    minCount = min(minCount, count)
  }

  private static func step(_ value: Int, by delta: Int) -> Int {
    let (sum, overflowed) = value.addingReportingOverflow(delta)
    return overflowed ? value : sum
  }

  /// Back to zero everywhere.
  public mutating func reset() {
    self = Stats()
  }
}

/// Whether `number` is prime.
///
/// - Parameter number: Any integer.
/// - Returns: `true` for 2, 3, 5, 7, …
public func isPrime(_ number: Int) -> Bool {
  guard number > 1 else { return false }
  guard number > 3 else { return true }
  var divisor = 2
  while divisor * divisor <= number {
    if number % divisor == 0 { return false }
    divisor += 1
  }
  return true
}
