import CaseStudies
import Composable
import Testing
import TestSupport

/// The `@Shared` article's examples, as tests.
@MainActor
@Suite(.mainSerialExecutor) struct SharedCountTests {
  @Test func parentPassesItsReferenceToTheChild() async {
    let store = TestStore(initialState: ParentFeature.State()) { ParentFeature() }
    await store.send(.incrementButtonTapped) { $0.count = 1 }
    #expect(store.state.child.count == 1)
    await store.send(.child(.decrementButtonTapped)) { $0.child.count = 0 }
    #expect(store.state.count == 0)
  }

  @Test func appWideCountIsSharedByKeyWithoutPassing() {
    let first = Store(initialState: AppWideCountFeature.State()) { AppWideCountFeature() }
    let second = Store(initialState: AppWideCountFeature.State()) { AppWideCountFeature() }
    first.send(.incrementButtonTapped)
    first.send(.incrementButtonTapped)
    #expect(second.count == 2)
    @Shared(.inMemory("count")) var count = 0
    #expect(count == 2)
  }

  @Test func publisherTurnsChangesIntoActions() async {
    let store = TestStore(initialState: AppWideCountFeature.State()) { AppWideCountFeature() }
    let task = await store.send(.task)
    await store.receive(.countUpdated(0)) { $0.observedCount = 0 }
    await store.send(.incrementButtonTapped) { $0.count = 1 }
    await store.receive(.countUpdated(1)) { $0.observedCount = 1 }
    // A change made outside this feature arrives through the publisher too.
    @Shared(.inMemory("count")) var count = 0
    $count.withLock { $0 = 10 }
    await store.receive(.countUpdated(10)) { $0.observedCount = 10 }
    await task.cancel()
  }

  @Test func outsideChangeNotifiesStoreObservers() {
    let store = Store(initialState: AppWideCountFeature.State()) { AppWideCountFeature() }
    var seen: [Int] = []
    let token = store.observe(\.count) { seen.append($0) }
    @Shared(.inMemory("count")) var count = 0
    $count.withLock { $0 += 5 }
    #expect(seen == [0, 5])
    token.cancel()
  }

  @Test func writingFromItsOwnPublisherIsReportedInsteadOfHanging() {
    let store = Store(initialState: AppWideCountFeature.State()) {
      AppWideCountFeature(writesBackOnUpdate: true)
    }
    withKnownIssue {
      store.send(.task)
    } matching: { $0.description.contains("Feedback loop detected") }
    #expect(store.count > 0)
  }

  @Test func customInitializers() {
    let parent = Shared(value: 3)
    let fromReference = ChildFeature.State(count: parent)
    parent.withLock { $0 += 1 }
    #expect(fromReference.count == 4)

    let fromValue = ChildFeature.State(count: 3)
    parent.withLock { $0 += 1 }
    #expect(fromValue.count == 3)

    let persisted = ChildFeature.State(persistedCount: 42)
    #expect(persisted.count == 42)
    persisted.$count.withLock { $0 = 7 }
    // A stored value wins over the default, and the default is not even evaluated.
    var evaluated = false
    let reloaded = ChildFeature.State(persistedCount: { evaluated = true; return 0 }())
    #expect(reloaded.count == 7)
    #expect(!evaluated)
  }
}
