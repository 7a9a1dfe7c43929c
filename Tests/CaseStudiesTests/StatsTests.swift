import CaseStudies
import Testing

/// `Stats` arithmetic at the ends of `Int`: another process may write any value, and a tap on
/// it must not crash every counter that mirrors it.
@Suite struct StatsTests {
  @Test func tapsAtTheEndsOfIntStayThere() {
    var top = Stats(count: .max, maxCount: .max, minCount: 0, numberOfCounts: .max)
    top.increment()
    #expect(top == Stats(count: .max, maxCount: .max, minCount: 0, numberOfCounts: .max))
    var bottom = Stats(count: .min, maxCount: 0, minCount: .min, numberOfCounts: 3)
    bottom.decrement()
    #expect(bottom == Stats(count: .min, maxCount: 0, minCount: .min, numberOfCounts: 4))
  }
}
