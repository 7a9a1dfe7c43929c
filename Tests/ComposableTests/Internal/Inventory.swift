import Composable

/// A list with two destinations, written as TCA's documentation writes presentation: an
/// `@Reducer enum` of destinations, `@Presents`, and `.ifLet(\.$destination, action:)`.
@Reducer
struct Inventory {
  @ObservableState
  struct State: Equatable {
    var items: [String] = []
    @Presents var destination: Destination.State?
  }

  enum Action {
    case addButtonTapped
    case deleteAllButtonTapped
    case destination(PresentationAction<Destination.Action>)
  }

  @Reducer
  enum Destination {
    case addItem(ItemForm)
    case alert(AlertState<Alert>)

    @CasePathable
    enum Alert: Equatable { case confirmDeletion }
  }

  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .addButtonTapped:
        state.destination = .addItem(ItemForm.State())
        return .none
      case .deleteAllButtonTapped:
        state.destination = .alert(.deleteAll)
        return .none
      case .destination(.presented(.addItem(.delegate(.save(let name))))):
        state.items.append(name)
        return .none
      case .destination(.presented(.alert(.confirmDeletion))):
        state.items = []
        return .none
      case .destination:
        return .none
      }
    }
    .ifLet(\.$destination, action: \.destination)
  }
}

extension Inventory.Destination.State: Equatable {}

extension AlertState where Action == Inventory.Destination.Alert {
  /// Asks before deleting every item.
  static var deleteAll: Self {
    AlertState {
      TextState("Delete all?")
    } actions: {
      ButtonState(role: .destructive, action: .confirmDeletion) { TextState("Delete") }
      ButtonState(role: .cancel) { TextState("Cancel") }
    }
  }
}

/// A presented form: a timer effect that runs while it is shown, and a save button that tells
/// the parent and dismisses itself.
@Reducer
struct ItemForm {
  @ObservableState
  struct State: Equatable {
    var name = ""
    var secondsOpen = 0
  }

  enum Action {
    case nameChanged(String)
    case task
    case tick
    case saveButtonTapped
    case delegate(Delegate)

    @CasePathable
    enum Delegate: Equatable { case save(String) }
  }

  @Dependency(\.continuousClock) var clock
  @Dependency(\.dismiss) var dismiss

  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .nameChanged(let name):
        state.name = name
        return .none
      case .task:
        return .run { send in
          while true {
            try await clock.sleep(for: .seconds(1))
            await send(.tick)
          }
        }
      case .tick:
        state.secondsOpen += 1
        return .none
      case .saveButtonTapped:
        return .run { [name = state.name] send in
          await send(.delegate(.save(name)))
          await dismiss()
        }
      case .delegate:
        return .none
      }
    }
  }
}
