/// The data of a confirmation dialog (an action sheet): a title, whether to show it, buttons
/// that send actions, and an optional message.
///
/// ```swift
/// state.confirmationDialog = ConfirmationDialogState(titleVisibility: .visible) {
///   TextState("Reset the statistics?")
/// } actions: {
///   ButtonState(role: .destructive, action: .confirmReset) { TextState("Reset") }
///   ButtonState(role: .cancel) { TextState("Cancel") }
/// } message: {
///   TextState("Every process mirroring them sees zero.")
/// }
/// ```
///
/// Presented like an ``AlertState``: any button's action also dismisses it.
public struct ConfirmationDialogState<Action> {
  /// Whether a presenter shows the title.
  public var titleVisibility: ConfirmationDialogStateTitleVisibility
  /// The headline.
  public var title: TextState
  /// The buttons.
  public var buttons: [ButtonState<Action>]
  /// Optional detail below the title.
  public var message: TextState?

  /// Creates a confirmation dialog.
  ///
  /// - Parameters:
  ///   - titleVisibility: Whether a presenter shows the title.
  ///   - title: The headline.
  ///   - actions: The buttons.
  ///   - message: Optional detail.
  public init(
    titleVisibility: ConfirmationDialogStateTitleVisibility = .automatic,
    title: () -> TextState,
    @ButtonStateBuilder<Action> actions: () -> [ButtonState<Action>] = { [] },
    message: (() -> TextState)? = nil
  ) {
    self.titleVisibility = titleVisibility
    self.title = title()
    self.buttons = actions()
    self.message = message?()
  }

  /// The same dialog sending another type of action.
  ///
  /// - Parameter transform: Maps each button's action (`nil` for none).
  /// - Returns: The dialog with mapped buttons.
  public func map<NewAction>(
    _ transform: (Action?) -> NewAction?
  ) -> ConfirmationDialogState<NewAction> {
    var dialog = ConfirmationDialogState<NewAction>(titleVisibility: titleVisibility) {
      title
    } actions: {
      for button in buttons { button.map(transform) }
    }
    dialog.message = message
    return dialog
  }
}

/// Whether a ``ConfirmationDialogState``'s title is shown.
public enum ConfirmationDialogStateTitleVisibility: Hashable, Sendable {
  /// As the platform decides.
  case automatic
  /// Never.
  case hidden
  /// Always.
  case visible
}

extension ConfirmationDialogState: Equatable where Action: Equatable {}
extension ConfirmationDialogState: Hashable where Action: Hashable {}
extension ConfirmationDialogState: Sendable where Action: Sendable {}
extension ConfirmationDialogState: _EphemeralState {}
