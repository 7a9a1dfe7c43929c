import Composable
import ConcurrencyExtras
import Foundation
import Observation
import TestSupport
import Testing

@MainActor
@Suite(.mainSerialExecutor) struct ObservationTests {
  /// Whether `action` changes anything `read` reads, as Swift's Observation sees it (its
  /// `onChange` runs synchronously, so this needs no waiting).
  private func changes(
    _ store: StoreOf<Profile>, reading read: @escaping @MainActor () -> Void,
    when action: Profile.Action
  ) -> Bool {
    let changed = LockIsolated(false)
    withObservationTracking(read) { changed.setValue(true) }
    store.send(action)
    return changed.value
  }

  @Test func aViewHearsOnlyOfThePropertiesItRead() {
    let store = Store(initialState: Profile.State()) { Profile() }
    let renamed = changes(store, reading: { _ = store.visits }, when: .rename("Blob"))
    let visited = changes(store, reading: { _ = store.visits }, when: .visit)
    let renamedAgain = changes(store, reading: { _ = store.name }, when: .rename("Blob Jr."))
    #expect(!renamed)
    #expect(visited)
    #expect(renamedAgain)
  }

  @Test func writingAnEqualValueTellsNobody() {
    let store = Store(initialState: Profile.State()) { Profile() }
    store.send(.rename("Blob"))
    let renamed = changes(store, reading: { _ = store.name }, when: .rename("Blob"))
    #expect(!renamed)
  }

  @Test func aChildsPropertiesAreTrackedOneByOne() {
    let store = Store(initialState: Profile.State()) { Profile() }
    let relabelled = changes(
      store, reading: { _ = store.badge.taps }, when: .badge(.relabel("VIP")))
    let tapped = changes(store, reading: { _ = store.badge.taps }, when: .badge(.tap))
    let labelTapped = changes(store, reading: { _ = store.badge.label }, when: .badge(.tap))
    #expect(!relabelled)
    #expect(tapped)
    #expect(!labelTapped)
  }

  @Test func replacingAChildTellsItsReaders() {
    let store = Store(initialState: Profile.State()) { Profile() }
    store.send(.badge(.tap))
    let replaced = changes(store, reading: { _ = store.badge.taps }, when: .newBadge)
    #expect(replaced)
  }

  @Test func anIgnoredPropertyTellsNobody() {
    let store = Store(initialState: Profile.State()) { Profile() }
    let scribbled = changes(store, reading: { _ = store.scratch }, when: .scribble)
    #expect(!scribbled)
  }

  @Test func aSharedValueChangedOutsideTheStoreTellsItsReaders() {
    let total = Shared(0)
    let store = Store(initialState: Profile.State(total: total)) { Profile() }
    let changed = LockIsolated(false)
    withObservationTracking {
      _ = store.total
    } onChange: {
      changed.setValue(true)
    }
    total.withLock { $0 += 1 }
    #expect(changed.value)
    #expect(store.total == 1)
  }

  @Test func aSharedValueWrittenWithTheSameValueTellsNobody() {
    let total = Shared(5)
    let store = Store(initialState: Profile.State(total: total)) { Profile() }
    let changed = LockIsolated(false)
    withObservationTracking {
      _ = store.total
    } onChange: {
      changed.setValue(true)
    }
    total.withLock { $0 = 5 }
    #expect(!changed.value)
  }

  @Test func aScopedStoreTracksItsChildState() {
    let store = Store(initialState: Profile.State()) { Profile() }
    let badge = store.scope(state: \.badge, action: \.badge)
    let changed = LockIsolated(false)
    withObservationTracking {
      _ = badge.taps
    } onChange: {
      changed.setValue(true)
    }
    badge.send(.tap)
    #expect(changed.value)
  }

  @Test func stateThatIsNotObservableChangesOnEverySend() {
    let store = Store(initialState: Plain.State()) { Plain() }
    let changed = LockIsolated(false)
    withObservationTracking {
      _ = store.count
    } onChange: {
      changed.setValue(true)
    }
    store.send(.unrelated)
    #expect(changed.value)
  }

  @Test func aViewOfPlainStateRendersAgainAfterEverySend() async {
    let store = Store(initialState: Plain.State()) { Plain() }
    let renders = LockIsolated(0)
    let token = observe {
      _ = store.count
      renders.withValue { $0 += 1 }
    }
    store.send(.unrelated)
    await Task.megaYield()
    store.send(.unrelated)
    await Task.megaYield()
    // At least once per send; a @Shared value changed by a test running alongside also counts
    // as a change of state that is not observable.
    #expect(renders.value >= 3)
    token.cancel()
  }

  /// Another thread changes a shared value after the view read it and before Observation
  /// installed the view's tracking (as a broker's update does while a screen draws): the view
  /// runs again and shows the new value, instead of staying on the one it read.
  @Test func aSharedValueChangedByAnotherThreadWhileAViewReadsIsShown() async {
    let total = Shared(0)
    let store = Store(initialState: Profile.State(total: total)) { Profile() }
    let shown = LockIsolated<[Int]>([])
    let token = observe {
      let value = store.total
      shown.withValue { $0.append(value) }
      if value == 0 {
        let written = DispatchSemaphore(value: 0)
        Thread {
          total.withLock { $0 = 1 }
          written.signal()
        }.start()
        written.wait()
      }
    }
    let deadline = ContinuousClock.now + .seconds(5)
    while shown.value.last != 1, ContinuousClock.now < deadline { await Task.megaYield() }
    #expect(shown.value.first == 0)
    #expect(shown.value.last == 1)
    token.cancel()
  }

  @Test func observeRendersAgainOnceForEachBatchOfChanges() async {
    let store = Store(initialState: Profile.State()) { Profile() }
    let renders = LockIsolated<[Int]>([])
    let token = observe {
      let visits = store.visits
      renders.withValue { $0.append(visits) }
    }
    #expect(renders.value == [0])
    store.send(.visit)
    store.send(.visit)
    await Task.megaYield()
    #expect(renders.value == [0, 2])
    store.send(.rename("Blob"))
    await Task.megaYield()
    #expect(renders.value == [0, 2])
    token.cancel()
    store.send(.visit)
    await Task.megaYield()
    #expect(renders.value == [0, 2])
  }

  @Test func aViewStorePublishesDistinctViewStates() {
    let store = Store(initialState: Profile.State()) { Profile() }
    let viewStore = ViewStore(store, observe: \.visits)
    let published = LockIsolated<[Int]>([])
    let subscription = viewStore.publisher.sink { value in published.withValue { $0.append(value) }
    }
    viewStore.send(.visit)
    viewStore.send(.rename("Blob"))
    viewStore.send(.visit)
    #expect(published.value == [0, 1, 2])
    #expect(viewStore.state == 2)
    subscription.cancel()
  }

  @Test func testFailuresNameTrackedPropertiesAsWritten() async {
    let store = TestStore(initialState: Profile.State()) { Profile() }
    await withKnownIssue {
      await store.send(.visit)
    } matching: { issue in
      issue.description.contains("+   visits: 1") && !issue.description.contains("_visits")
    }
  }
}

/// A feature written without `@ObservableState`.
@Reducer
private struct Plain {
  struct State { var count = 0 }
  enum Action { case unrelated }
  func reduce(into state: inout State, action: Action) -> Effect<Action> { .none }
}
