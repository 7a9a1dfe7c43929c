import Composable

/// A contact's screen, pushed on the address book's stack.
@Reducer
public struct ContactDetail {
  /// The screen's state.
  @ObservableState
  public struct State: Equatable {
    /// The contact shown.
    public var contact: Contact

    /// A screen for `contact`.
    public init(contact: Contact) {
      self.contact = contact
    }
  }

  /// What the user can do.
  public enum Action {
    /// What the screen asks of the book.
    case delegate(Delegate)
    /// Asks to delete the contact.
    case deleteButtonTapped
    /// Stars or unstars the contact.
    case favoriteButtonTapped

    /// What the screen asks of the book.
    @CasePathable
    public enum Delegate: Equatable {
      /// Delete this contact (after asking).
      case deleteRequested(Contact.ID)
    }
  }

  /// The screen.
  public init() {}

  /// Stars, and hands deletion to the book, which asks first.
  public var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .delegate:
        return .none
      case .deleteButtonTapped:
        return .send(.delegate(.deleteRequested(state.contact.id)))
      case .favoriteButtonTapped:
        state.contact.isFavorite.toggle()
        return .none
      }
    }
  }
}
