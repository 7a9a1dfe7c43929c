import Composable
import Testing

@MainActor
@Suite struct StoreCaseTests {
  /// A store running a `@Reducer enum`'s reducer.
  private static func store<R: CaseReducer>(of _: R.Type, _ state: R.State) -> StoreOf<R> {
    Store(initialState: state) { R.body }
  }

  @Test func storeCaseHandsOutAStoreOfTheCurrentCase() {
    let store = Self.store(of: Inventory.Destination.self, .addItem(ItemForm.State()))
    switch store.case {
    case .addItem(let form):
      form.send(.nameChanged("Eggs"))
      #expect(form.name == "Eggs")
      #expect(store.state.addItem?.name == "Eggs")
    case .alert:
      Issue.record("expected the form")
    }
  }

  @Test func storeCaseHandsOutAnAlertsState() {
    let store = Self.store(of: Inventory.Destination.self, .alert(.deleteAll))
    switch store.case {
    case .alert(let alert): #expect(alert == .deleteAll)
    case .addItem: Issue.record("expected the alert")
    }
  }
}
