import Composable
import TestSupport
import Testing

/// The `@Shared` article's code compiles as written (see `Internal/Seed000.swift`) and behaves as the
/// article says.
@MainActor
@Suite(.mainSerialExecutor) struct SeedSnippetTests {
  @Test func theChildHoldsTheParentsCountByReference() async {
    let count = Shared(0)
    let store = TestStore(
      initialState: ParentChild.ParentFeature.State(
        count: count, child: ParentChild.ChildFeature.State(count: Shared(0))
      )
    ) {
      ParentChild.ParentFeature()
    }
    await store.send(.presentButtonTapped) {
      $0.child = ParentChild.ChildFeature.State(count: $0.$count)
    }
    await store.send(.child(.incrementButtonTapped)) {
      $0.$count.withLock { $0 = 1 }
    }
    #expect(store.state.count == 1)
    #expect(store.state.child.count == 1)
  }

  @Test func aFeatureStillBeingWrittenIsAnEmptyReducer() {
    let store = Store(
      initialState: ParentChild.ParentFeatureAsWritten.State(
        count: Shared(3), child: ParentChild.ChildFeature.State(count: Shared(3))
      )
    ) {
      ParentChild.ParentFeatureAsWritten()
    }
    #expect(store.count == 3)
  }

  @Test func theAppWideCountIsObservedWithAPublisher() async {
    let store = TestStore(initialState: AppWide.ChildFeature.State()) { AppWide.ChildFeature() }
    let task = await store.send(.onAppear)
    await store.receive(\.countUpdated, 0)
    // Another feature anywhere in the app shares the same count by key.
    let elsewhere = Shared(wrappedValue: 0, .inMemory("count"))
    elsewhere.withLock { $0 = 7 }
    await store.receive(\.countUpdated, 7) { $0.$count.withLock { $0 = 7 } }
    await task.cancel()
  }

  @Test func writingTheCountFromItsOwnPublisherIsReportedAsALoop() async {
    let store = Store(initialState: AppWide.LoopingChildFeature.State()) {
      AppWide.LoopingChildFeature()
    }
    withKnownIssue {
      store.send(.onAppear)
    } matching: {
      $0.description.contains("Feedback loop detected")
    }
  }

  @Test func theCustomInitializersShareOrPersistAsDescribed() {
    let parent = Shared(1)
    let fromParent = FromTheParent.State(count: parent)
    parent.withLock { $0 = 2 }
    #expect(fromParent.count == 2)
    #expect(FromAValue.State(count: 5).count == 5)
    let persisted = Persisted.State(count: 9)
    // A value already stored wins over the default: the lazy form never evaluates it.
    func notEvaluated() -> Int {
      Issue.record("The default was evaluated although a value was stored")
      return 0
    }
    let lazily = PersistedLazily.State(count: notEvaluated())
    #expect(lazily.count == 9)
    #expect(persisted.count == 9)
  }
}
