import Clocks
import Composable
import TestSupport
import Testing

@MainActor
@Suite(.mainSerialExecutor) struct PresentationTests {
  /// A store that presented the form and started its timer, on a test clock.
  private func storeWithTheFormOpen() async -> (TestStoreOf<Inventory>, TestClock<Duration>) {
    let clock = TestClock()
    let store = TestStore(initialState: Inventory.State()) {
      Inventory()
    } withDependencies: {
      $0.continuousClock = clock
    }
    await store.send(.addButtonTapped) { $0.destination = .addItem(ItemForm.State()) }
    await store.send(\.destination.addItem.task)
    return (store, clock)
  }

  @Test func presentedEffectsRunUntilTheChildDismissesItself() async {
    let (store, clock) = await storeWithTheFormOpen()
    await clock.advance(by: .seconds(2))
    await store.receive(\.destination.addItem.tick) {
      $0.destination?.modify(\.addItem) { $0.secondsOpen = 1 }
    }
    await store.receive(\.destination.addItem.tick) {
      $0.destination?.modify(\.addItem) { $0.secondsOpen = 2 }
    }
    await store.send(\.destination.addItem.nameChanged, "Milk") {
      $0.destination?.modify(\.addItem) { $0.name = "Milk" }
    }
    await store.send(\.destination.addItem.saveButtonTapped)
    await store.receive(\.destination.addItem.delegate.save) { $0.items = ["Milk"] }
    await store.receive(\.destination.dismiss) { $0.destination = nil }
    // The timer ended with the presentation: nothing is in flight, and time sends nothing.
    await clock.advance(by: .seconds(5))
  }

  @Test func dismissingFromTheParentCancelsTheChildsEffects() async {
    let (store, clock) = await storeWithTheFormOpen()
    await store.send(\.destination.dismiss) { $0.destination = nil }
    await clock.advance(by: .seconds(5))
  }

  @Test func replacingThePresentationCancelsTheOldOnesEffects() async {
    let (store, clock) = await storeWithTheFormOpen()
    await store.send(.deleteAllButtonTapped) {
      $0.destination = .alert(.deleteAll)
    }
    await clock.advance(by: .seconds(5))
  }

  @Test func alertActionsReachTheParent() async {
    let store = TestStore(initialState: Inventory.State(items: ["Milk"])) { Inventory() }
    await store.send(.deleteAllButtonTapped) {
      $0.destination = .alert(.deleteAll)
    }
    // Answering an alert also dismisses it.
    await store.send(\.destination.alert.confirmDeletion) {
      $0.items = []
      $0.destination = nil
    }
  }

  @Test func aChildActionWithNothingPresentedIsReported() async {
    let store = TestStore(initialState: Inventory.State()) { Inventory() }
    await withKnownIssue {
      await store.send(\.destination.addItem.tick)
    } matching: {
      $0.description.contains("when nothing was presented")
    }
  }

  @Test func dismissOutsideAPresentationIsReported() async {
    let store = TestStore(initialState: ItemForm.State(name: "Milk")) { ItemForm() }
    await withKnownIssue {
      await store.send(.saveButtonTapped)
      await store.receive(\.delegate.save)
    } matching: {
      $0.description.contains("not presented")
    }
  }

  @Test func aStoreScopedToThePresentedCaseSendsThroughIt() async {
    let store = Store(initialState: Inventory.State()) { Inventory() }
    #expect(store.scope(state: \.destination?.addItem, action: \.destination.addItem) == nil)
    store.send(.addButtonTapped)
    let form = store.scope(state: \.destination?.addItem, action: \.destination.addItem)
    form?.send(.nameChanged("Eggs"))
    #expect(form?.name == "Eggs")
    #expect(store.destination?.addItem?.name == "Eggs")
  }
}
