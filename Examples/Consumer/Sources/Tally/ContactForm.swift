import Composable

/// A form for a new contact, pushed on the address book's stack: its fields are bound, and
/// saving tells the book and pops the form.
@Reducer
public struct ContactForm {
  /// The form's state.
  @ObservableState
  public struct State: Equatable {
    /// The name field.
    public var name = ""
    /// The favourite toggle.
    public var isFavorite = false
    /// Whether the save button is enabled: a name was typed.
    public var canSave = false

    /// An empty form.
    public init() {}
  }

  /// What the user can do.
  public enum Action: BindableAction {
    /// A field changed.
    case binding(BindingAction<State>)
    /// What the form tells the book.
    case delegate(Delegate)
    /// Saves the contact.
    case saveButtonTapped

    /// What the form tells the book.
    @CasePathable
    public enum Delegate: Equatable {
      /// Add a contact with this name and star.
      case save(name: String, isFavorite: Bool)
    }
  }

  @Dependency(\.dismiss) var dismiss

  /// The form.
  public init() {}

  /// Applies the fields, enables saving, and saves.
  public var body: some ReducerOf<Self> {
    BindingReducer()
    Reduce { state, action in
      switch action {
      case .binding(\.name):
        state.canSave = !state.name.isEmpty
        return .none
      case .binding, .delegate:
        return .none
      case .saveButtonTapped:
        return .run { [name = state.name, isFavorite = state.isFavorite, dismiss] send in
          await send(.delegate(.save(name: name, isFavorite: isFavorite)))
          await dismiss()
        }
      }
    }
  }
}
