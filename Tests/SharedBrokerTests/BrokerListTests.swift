import Testing

@testable import SharedBroker

/// The brokers a client moves among: given ones, then what its cluster announces.
@Suite struct BrokerListTests {
  /// Moves on, and says where to (`nil` when there was nowhere else to go).
  func next(_ list: inout BrokerList) -> String? {
    list.moveToNext() ? list.current : nil
  }

  /// Takes an announcement and says whether it changed the list.
  func learn(_ announced: [String], _ list: inout BrokerList) -> Bool {
    list.learn(announced)
  }

  @Test func oneGivenBrokerHasNoOtherUntilTheClusterNamesSome() {
    var list = BrokerList(given: ["a"])
    #expect(!list.hasOthers && list.current == "a")
    #expect(next(&list) == nil)
    #expect(learn(["a", "b", "c"], &list))
    #expect(!learn(["a", "b", "c"], &list))
    #expect(list.all == ["a", "b", "c"])
    #expect([next(&list), next(&list), next(&list)] == ["b", "c", "a"])
  }

  @Test func announcedBrokersComeFirstAndGivenOnesStayAsTheLastResort() {
    var list = BrokerList(given: ["a", "z"])
    // "a" left the cluster: the live ones are tried before it, and it is never forgotten.
    #expect(learn(["c", "b", "c"], &list))
    #expect(list.all == ["c", "b", "a", "z"])
    #expect(list.current == "a")
    #expect([next(&list), next(&list)] == ["z", "c"])
    // The current broker left the list: the next move starts from the first.
    #expect(learn(["b", "d"], &list))
    #expect(next(&list) == "b")
    // An empty announcement (a broker of no cluster) leaves the given ones.
    #expect(learn([], &list))
    #expect(list.all == ["a", "z"])
  }
}
