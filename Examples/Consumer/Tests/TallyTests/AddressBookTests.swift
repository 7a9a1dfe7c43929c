import Composable
import Tally
import Testing

/// A form with bindings, a stack with two kinds of screen and an alert built with the
/// builders, tested with TestStore as a TCA user tests them.
@MainActor
@Suite(.timeLimit(.minutes(1)), .disabled(if: TallyTests.wrongAssertions))
struct AddressBookTests {
  @Test func aContactIsAddedThroughTheForm() async {
    let store = TestStore(initialState: AddressBook.State()) { AddressBook() }
    await store.send(.addButtonTapped) { $0.path[id: 0] = .form(ContactForm.State()) }
    await store.send(\.path[id: 0].form.binding.name, "Blob") {
      $0.path[id: 0, case: \.form]?.name = "Blob"
      $0.path[id: 0, case: \.form]?.canSave = true
    }
    await store.send(\.path[id: 0].form.binding.isFavorite, true) {
      $0.path[id: 0, case: \.form]?.isFavorite = true
    }
    await store.send(\.path[id: 0].form.saveButtonTapped)
    await store.receive(\.path[id: 0].form.delegate.save) {
      $0.contacts = [Contact(id: 0, name: "Blob", isFavorite: true)]
      $0.nextID = 1
    }
    await store.receive(\.path.popFrom, 0) { $0.path = [] }
  }

  @Test func deletingAContactAsksFirst() async {
    let blob = Contact(id: 0, name: "Blob")
    let store = TestStore(initialState: AddressBook.State(contacts: [blob])) { AddressBook() }
    await store.send(.contactTapped(0)) {
      $0.path.append(.detail(ContactDetail.State(contact: blob)))
    }
    await store.send(\.path[id: 0].detail.favoriteButtonTapped) {
      $0.path[id: 0, case: \.detail]?.contact.isFavorite = true
    }
    await store.send(\.path[id: 0].detail.deleteButtonTapped)
    await store.receive(\.path[id: 0].detail.delegate.deleteRequested, 0) {
      $0.alert = .delete(blob)
    }
    await store.send(\.alert.confirmDeletion, 0) {
      $0.alert = nil
      $0.contacts = []
      $0.path = []
    }
  }

  @Test func theAlertReadsAsTCAWritesIt() {
    let alert = AlertState<AddressBook.Action.Alert>.delete(Contact(id: 3, name: "Blob"))
    #expect(alert.title == "Delete Blob?")
    #expect(alert.message == "This cannot be undone.")
    #expect(alert.buttons.map(\.role) == [.destructive, .cancel])
    #expect(alert.buttons.first?.action.action == .confirmDeletion(3))
  }
}
