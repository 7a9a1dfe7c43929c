import Sharing
import Testing

@Suite struct InMemoryKeyTests {
  @Test func sameKeyIsTheSameReference() {
    @Shared(.inMemory("count")) var first = 0
    @Shared(.inMemory("count")) var second = 99
    #expect(second == 0)
    $first.withLock { $0 = 5 }
    #expect(second == 5)
  }

  @Test func valueOutlivesItsReferences() {
    do {
      @Shared(.inMemory("kept")) var value = "a"
      $value.withLock { $0 = "b" }
    }
    @Shared(.inMemory("kept")) var again = "default"
    #expect(again == "b")
  }

  @Test func testsStartFromFreshStorage() {
    // Another test wrote "count"; this one starts from its own storage.
    @Shared(.inMemory("count")) var count = 0
    #expect(count == 0)
  }

  @Test func keyWithDefault() {
    @Shared(.counter) var counter
    #expect(counter == 7)
    #expect("\(InMemoryKey<Int>.Default.counter)" == ".inMemory(\"counter\")")
  }

  @Test func descriptionPrintsTheCall() {
    let key: InMemoryKey<Int> = .inMemory("count")
    #expect(key.description == ".inMemory(\"count\")")
  }
}

extension SharedReaderKey where Self == InMemoryKey<Int>.Default {
  static var counter: Self { Self[.inMemory("counter"), default: 7] }
}
