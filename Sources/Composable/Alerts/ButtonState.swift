/// A button of an ``AlertState`` or a ``ConfirmationDialogState``: its label, its role and the
/// action it sends.
///
/// ```swift
/// ButtonState(role: .destructive, action: .confirmDeletion) {
///   TextState("Delete")
/// }
/// ButtonState(role: .cancel) { TextState("Cancel") }
/// ```
public struct ButtonState<Action> {
  /// What tapping the button sends.
  public let action: ButtonStateAction<Action>
  /// The label.
  public let label: TextState
  /// The role, for a presenter to style and order the button.
  public let role: ButtonStateRole?

  /// Creates a button that sends `action`.
  ///
  /// - Parameters:
  ///   - role: The role, if any.
  ///   - action: The action sent when tapped.
  ///   - label: The label.
  public init(role: ButtonStateRole? = nil, action: Action, label: () -> TextState) {
    self.init(role: role, action: .send(action), label: label())
  }

  /// Creates a button that sends what `action` says: `action: .send(.confirmDeletion)`.
  ///
  /// - Parameters:
  ///   - role: The role, if any.
  ///   - action: What tapping it sends.
  ///   - label: The label.
  public init(
    role: ButtonStateRole? = nil, action: ButtonStateAction<Action>, label: () -> TextState
  ) {
    self.init(role: role, action: action, label: label())
  }

  /// Creates a button that sends nothing: tapping it only dismisses.
  ///
  /// - Parameters:
  ///   - role: The role, if any.
  ///   - label: The label.
  public init(role: ButtonStateRole? = nil, label: () -> TextState) {
    self.init(role: role, action: .send(nil), label: label())
  }

  private init(role: ButtonStateRole?, action: ButtonStateAction<Action>, label: TextState) {
    self.role = role
    self.action = action
    self.label = label
  }

  /// Calls `perform` with the button's action, as a presenter does when it is tapped.
  ///
  /// - Parameter perform: Receives the action (`nil` for a button that only dismisses).
  public func withAction(_ perform: (Action?) -> Void) {
    perform(action.action)
  }

  /// The same button sending another type of action.
  ///
  /// - Parameter transform: Maps the action (`nil` for none).
  /// - Returns: The button with the mapped action.
  public func map<NewAction>(_ transform: (Action?) -> NewAction?) -> ButtonState<NewAction> {
    ButtonState<NewAction>(role: role, action: .send(transform(action.action)), label: label)
  }
}

/// What tapping a ``ButtonState`` sends.
public struct ButtonStateAction<Action> {
  /// The action; `nil` only dismisses.
  public let action: Action?

  /// Sends `action` when tapped.
  ///
  /// - Parameter action: The action; `nil` only dismisses.
  /// - Returns: The button's action.
  public static func send(_ action: Action?) -> Self {
    Self(action: action)
  }
}

/// What a button does, for a presenter to style it.
public enum ButtonStateRole: Hashable, Sendable {
  /// Dismisses without acting.
  case cancel
  /// Destroys something.
  case destructive
}

extension ButtonState: Equatable where Action: Equatable {}
extension ButtonState: Hashable where Action: Hashable {}
extension ButtonState: Sendable where Action: Sendable {}
extension ButtonStateAction: Equatable where Action: Equatable {}
extension ButtonStateAction: Hashable where Action: Hashable {}
extension ButtonStateAction: Sendable where Action: Sendable {}

// MARK: - The earlier form

/// A button of an ``AlertState``: the name this module used before ``ButtonState``.
public typealias AlertButton<Action> = ButtonState<Action>

extension ButtonState {
  /// Creates a button from a plain label: the form this module had before TCA's
  /// `ButtonState(role:action:label:)`.
  ///
  /// - Parameters:
  ///   - label: The label.
  ///   - role: The role, if any.
  ///   - action: The action sent when tapped; `nil` only dismisses.
  public init(_ label: String, role: ButtonStateRole? = nil, action: Action? = nil) {
    self.init(role: role, action: .send(action), label: TextState(label))
  }
}
