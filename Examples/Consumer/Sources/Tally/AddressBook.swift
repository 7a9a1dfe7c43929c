import Composable

/// An address book, written as a TCA user writes one: a navigation stack with two kinds of
/// screen (a form with bindings and a contact's detail) and a deletion alert built with TCA's
/// builders.
@Reducer
public struct AddressBook {
  /// The book's state.
  @ObservableState
  public struct State: Equatable {
    /// The contacts, in the order they were added.
    public var contacts: IdentifiedArrayOf<Contact> = []
    /// The screens pushed on the stack.
    public var path = StackState<Path.State>()
    /// The deletion alert, while shown.
    @Presents public var alert: AlertState<Action.Alert>?
    /// The id the next contact gets.
    public var nextID = 0

    /// A book of `contacts` with `path` pushed.
    public init(contacts: IdentifiedArrayOf<Contact> = [], path: StackState<Path.State> = []) {
      self.contacts = contacts
      self.path = path
      nextID = (contacts.ids.max() ?? -1) + 1
    }
  }

  /// What the user can do.
  public enum Action {
    /// Pushes the form.
    case addButtonTapped
    /// The alert.
    case alert(PresentationAction<Alert>)
    /// Pushes a contact's screen.
    case contactTapped(Contact.ID)
    /// The stack.
    case path(StackActionOf<Path>)

    /// The alert's buttons.
    @CasePathable
    public enum Alert: Equatable {
      /// Deletes the contact.
      case confirmDeletion(Contact.ID)
    }
  }

  /// The screens of the stack.
  @Reducer
  public enum Path {
    /// A new contact's form.
    case form(ContactForm)
    /// A contact's screen.
    case detail(ContactDetail)
  }

  /// The book.
  public init() {}

  /// Pushes screens, adds what the form saves, and deletes what the alert confirms.
  public var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .addButtonTapped:
        state.path.append(.form(ContactForm.State()))
        return .none
      case .alert(.presented(.confirmDeletion(let id))):
        state.contacts.remove(id: id)
        state.path.removeAll()
        return .none
      case .alert:
        return .none
      case .contactTapped(let id):
        guard let contact = state.contacts[id: id] else { return .none }
        state.path.append(.detail(ContactDetail.State(contact: contact)))
        return .none
      case .path(.element(id: _, action: .form(.delegate(.save(let name, let isFavorite))))):
        state.contacts.append(Contact(id: state.nextID, name: name, isFavorite: isFavorite))
        state.nextID += 1
        return .none
      case .path(.element(id: _, action: .detail(.delegate(.deleteRequested(let id))))):
        guard let contact = state.contacts[id: id] else { return .none }
        state.alert = .delete(contact)
        return .none
      case .path:
        return .none
      }
    }
    .forEach(\.path, action: \.path)
    .ifLet(\.$alert, action: \.alert)
  }
}

extension AddressBook.Path.State: Equatable {}

extension AlertState where Action == AddressBook.Action.Alert {
  /// Asks before deleting `contact`.
  public static func delete(_ contact: Contact) -> Self {
    AlertState {
      TextState("Delete \(contact.name)?")
    } actions: {
      ButtonState(role: .destructive, action: .confirmDeletion(contact.id)) {
        TextState("Delete")
      }
      ButtonState(role: .cancel) { TextState("Cancel") }
    } message: {
      TextState("This cannot be undone.")
    }
  }
}
