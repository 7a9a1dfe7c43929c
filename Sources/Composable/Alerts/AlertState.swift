/// The data of an alert: a title, buttons that send actions, and an optional message.
///
/// Built as in TCA, with ``ButtonStateBuilder`` for the buttons:
///
/// ```swift
/// state.alert = AlertState {
///   TextState("Delete all items?")
/// } actions: {
///   ButtonState(role: .destructive, action: .confirmDeletion) { TextState("Delete") }
///   ButtonState(role: .cancel) { TextState("Cancel") }
/// } message: {
///   TextState("This cannot be undone.")
/// }
/// ```
///
/// Presented with `@Presents var alert: AlertState<Action.Alert>?` and
/// `.ifLet(\.$alert, action: \.alert)`, any button's action also dismisses it. A terminal
/// program renders it however it likes; tests compare it like any state.
public struct AlertState<Action>: CustomStringConvertible {
  /// The headline.
  public var title: TextState
  /// The buttons; an alert with none is dismissed by its presenter.
  public var buttons: [ButtonState<Action>]
  /// Optional detail below the title.
  public var message: TextState?

  /// Creates an alert.
  ///
  /// - Parameters:
  ///   - title: The headline.
  ///   - actions: The buttons.
  ///   - message: Optional detail.
  public init(
    title: () -> TextState,
    @ButtonStateBuilder<Action> actions: () -> [ButtonState<Action>] = { [] },
    message: (() -> TextState)? = nil
  ) {
    self.init(title: title(), buttons: actions(), message: message?())
  }

  private init(title: TextState, buttons: [ButtonState<Action>], message: TextState?) {
    self.title = title
    self.buttons = buttons
    self.message = message
  }

  /// Creates an alert from plain strings: the form this module had before TCA's builders.
  ///
  /// ```swift
  /// state.alert = AlertState(title: "👍 The number 3 is prime!")
  /// ```
  ///
  /// - Parameters:
  ///   - title: The headline.
  ///   - message: Optional detail.
  ///   - buttons: The buttons.
  public init(title: String, message: String? = nil, buttons: [ButtonState<Action>] = []) {
    self.init(title: TextState(title), buttons: buttons, message: message.map { TextState($0) })
  }

  /// The same alert sending another type of action, as a parent does to embed a child's.
  ///
  /// - Parameter transform: Maps each button's action (`nil` for none).
  /// - Returns: The alert with mapped buttons.
  public func map<NewAction>(_ transform: (Action?) -> NewAction?) -> AlertState<NewAction> {
    AlertState<NewAction>(
      title: title, buttons: buttons.map { $0.map(transform) }, message: message
    )
  }

  /// The title and message on one line.
  public var description: String {
    message.map { "\(title) \($0)" } ?? title.description
  }
}

extension AlertState: Equatable where Action: Equatable {}
extension AlertState: Hashable where Action: Hashable {}
extension AlertState: Sendable where Action: Sendable {}

/// State that lives only until the user answers it, such as an alert: presented with
/// ``Presents()``, any action it sends also dismisses it.
public protocol _EphemeralState {}

extension AlertState: _EphemeralState {}
