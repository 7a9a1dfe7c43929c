import Composable
import TestSupport
import Testing

/// A feature that confirms with a dialog and reports the outcome with an alert, both answered
/// through `.ifLet` without a child reducer.
@Reducer
private struct Eraser {
  @ObservableState
  struct State: Equatable {
    var items = ["Milk", "Eggs"]
    @Presents var alert: AlertState<Action.Alert>?
    @Presents var confirmationDialog: ConfirmationDialogState<Action.Dialog>?
  }
  enum Action {
    case alert(PresentationAction<Alert>)
    case confirmationDialog(PresentationAction<Dialog>)
    case eraseButtonTapped
    @CasePathable enum Alert: Equatable { case undo }
    @CasePathable enum Dialog: Equatable { case erase }
  }
  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .eraseButtonTapped:
        state.confirmationDialog = .erase(count: state.items.count)
        return .none
      case .confirmationDialog(.presented(.erase)):
        state.items = []
        state.alert = AlertState {
          TextState("Erased")
        } actions: {
          ButtonState(action: .undo) { TextState("Undo") }
        }
        return .none
      case .alert(.presented(.undo)):
        state.items = ["Milk", "Eggs"]
        return .none
      case .alert, .confirmationDialog:
        return .none
      }
    }
    .ifLet(\.$alert, action: \.alert)
    .ifLet(\.$confirmationDialog, action: \.confirmationDialog)
  }
}

extension ConfirmationDialogState where Action == Eraser.Action.Dialog {
  fileprivate static func erase(count: Int) -> Self {
    ConfirmationDialogState(titleVisibility: .visible) {
      TextState("Erase \(count) items?")
    } actions: {
      ButtonState(role: .destructive, action: .erase) { TextState("Erase") }
      ButtonState(role: .cancel) { TextState("Cancel") }
    } message: {
      TextState("This cannot be undone.")
    }
  }
}

@MainActor
@Suite(.mainSerialExecutor) struct AlertStateTests {
  @Test func theBuildersMakeTheSameAlertAsThePlainForm() {
    let built = AlertState<Int> {
      TextState("Delete?")
    } actions: {
      ButtonState(role: .destructive, action: 1) { TextState("Delete") }
      ButtonState(role: .cancel) { TextState("Cancel") }
    } message: {
      TextState("For good.")
    }
    let plain = AlertState<Int>(
      title: "Delete?", message: "For good.",
      buttons: [
        AlertButton("Delete", role: .destructive, action: 1), AlertButton("Cancel", role: .cancel),
      ]
    )
    #expect(built == plain)
    #expect(built.buttons[1].action.action == nil)
    #expect(String(state: built.title) == "Delete?")
    #expect(built.description == "Delete? For good.")
  }

  @Test(arguments: [false, true]) func theButtonBuilderTakesConditionsAndLoops(cancellable: Bool) {
    let alert = AlertState<Int> {
      TextState("Pick")
    } actions: {
      for number in 1...3 {
        ButtonState(action: number) { TextState("\(number)") }
      }
      if cancellable {
        ButtonState(role: .cancel) { TextState("Cancel") }
      } else {
        ButtonState(action: .send(0)) { TextState("None") }
      }
    }
    #expect(alert.buttons.map(\.label) == ["1", "2", "3", cancellable ? "Cancel" : "None"])
    #expect(alert.message == nil)
  }

  @Test func mapEmbedsTheButtonsActions() {
    let alert = AlertState<Int> {
      TextState("Pick")
    } actions: {
      ButtonState(action: 1) { TextState("One") }
      ButtonState { TextState("Nothing") }
    }
    let mapped = alert.map { $0.map { "#\($0)" } }
    #expect(mapped.buttons.map(\.action.action) == ["#1", nil])
    #expect(mapped.title == alert.title)
    var tapped: String?
    mapped.buttons[0].withAction { tapped = $0 }
    #expect(tapped == "#1")
    let dialog = ConfirmationDialogState<Eraser.Action.Dialog>.erase(count: 2).map { _ in 7 }
    #expect(dialog.buttons.map(\.action.action) == [7, 7])
    #expect(dialog.titleVisibility == .visible)
    #expect(dialog.message == "This cannot be undone.")
  }

  @Test func textStateJoinsAndInterpolates() {
    let name = "Blob"
    let text: TextState = "Hello, \(name)!"
    #expect(text == TextState("Hello, ") + TextState(verbatim: "Blob!"))
    #expect("\(text)" == "Hello, Blob!")
  }

  @Test func answeringADialogOrAnAlertDismissesIt() async {
    let store = TestStore(initialState: Eraser.State()) { Eraser() }
    await store.send(.eraseButtonTapped) { $0.confirmationDialog = .erase(count: 2) }
    await store.send(\.confirmationDialog.erase) {
      $0.confirmationDialog = nil
      $0.items = []
      $0.alert = AlertState {
        TextState("Erased")
      } actions: {
        ButtonState(action: .undo) { TextState("Undo") }
      }
    }
    await store.send(\.alert.undo) {
      $0.alert = nil
      $0.items = ["Milk", "Eggs"]
    }
  }

  @Test func aWrongAlertFailsWithItsTextInTheDiff() async {
    let store = TestStore(initialState: Eraser.State()) { Eraser() }
    await store.send(.eraseButtonTapped) { $0.confirmationDialog = .erase(count: 2) }
    await withKnownIssue {
      await store.send(\.confirmationDialog.erase) {
        $0.confirmationDialog = nil
        $0.items = []
        $0.alert = AlertState { TextState("Erased!") }
      }
    } matching: { issue in
      issue.description.contains(#"title: "Erased!""#)
        && issue.description.contains(#"title: "Erased""#)
    }
  }
}
