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

  @Test func aBrokerReachedUnderAnotherNameIsNotMovedBackTo() {
    // Given by address, announced (first, by itself) by host name.
    var list = BrokerList(given: ["tcp://127.0.0.1:1"])
    #expect(learn(["tcp://h:1", "tcp://h:2", "tcp://h:3"], &list))
    #expect(next(&list) == "tcp://h:2")
    // Announced again by h:2 itself, first: the next move goes on from there.
    #expect(learn(["tcp://h:2", "tcp://h:1", "tcp://h:3"], &list))
    #expect(next(&list) == "tcp://h:1")
  }

  @Test func announcedBrokersComeFirstAndGivenOnesStayAsTheLastResort() {
    var list = BrokerList(given: ["a", "z"])
    // The broker a client talks to announces itself first.
    #expect(learn(["a", "b", "c", "b"], &list))
    #expect(list.all == ["a", "b", "c", "z"])
    #expect(next(&list) == "b")
    // "a" left the cluster: the live ones are tried before it, and it is never forgotten.
    #expect(learn(["b", "c"], &list))
    #expect(list.all == ["b", "c", "a", "z"])
    #expect([next(&list), next(&list), next(&list), next(&list)] == ["c", "a", "z", "b"])
    // An empty announcement (a broker of no cluster) leaves the given ones.
    #expect(learn([], &list))
    #expect(list.all == ["a", "z"])
    // The current broker is on no list: the next move starts from the first.
    #expect(next(&list) == "a")
  }
}
