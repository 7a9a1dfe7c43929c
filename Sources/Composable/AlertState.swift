/// The data of an alert: a title, an optional message and buttons that send actions.
///
/// A terminal program renders it however it likes; tests compare it like any state.
///
/// ```swift
/// state.alert = AlertState(title: "👍 The number 3 is prime!")
/// ```
public struct AlertState<Action>: CustomStringConvertible {
  /// The headline.
  public var title: String
  /// Optional detail below the title.
  public var message: String?
  /// The buttons; an alert with none is dismissed by its presenter.
  public var buttons: [AlertButton<Action>]

  /// Creates an alert.
  ///
  /// - Parameters:
  ///   - title: The headline.
  ///   - message: Optional detail.
  ///   - buttons: The buttons.
  public init(title: String, message: String? = nil, buttons: [AlertButton<Action>] = []) {
    self.title = title
    self.message = message
    self.buttons = buttons
  }

  /// The title and message on one line.
  public var description: String {
    message.map { "\(title) \($0)" } ?? title
  }
}

/// A button of an ``AlertState``.
///
/// ```swift
/// AlertState(title: "Delete all?", buttons: [
///   AlertButton("Delete", role: .destructive, action: .confirmDeletion),
///   AlertButton("Cancel", role: .cancel),
/// ])
/// ```
public struct AlertButton<Action> {
  /// What a button does, for a view to style it: TCA's `ButtonStateRole`.
  public enum Role: Hashable, Sendable {
    /// Dismisses without acting.
    case cancel
    /// Destroys something.
    case destructive
  }

  /// The label.
  public var label: String
  /// The role, if any.
  public var role: Role?
  /// The action sent when tapped; `nil` just dismisses.
  public var action: Action?

  /// Creates a button.
  ///
  /// - Parameters:
  ///   - label: The label.
  ///   - role: The role, if any.
  ///   - action: The action sent when tapped.
  public init(_ label: String, role: Role? = nil, action: Action? = nil) {
    self.label = label
    self.role = role
    self.action = action
  }
}

extension AlertState: Equatable where Action: Equatable {}
extension AlertState: Hashable where Action: Hashable {}
extension AlertState: Sendable where Action: Sendable {}
extension AlertButton: Equatable where Action: Equatable {}
extension AlertButton: Hashable where Action: Hashable {}
extension AlertButton: Sendable where Action: Sendable {}

/// State that lives only until the user answers it, such as an alert: presented with
/// ``Presents()``, any action it sends also dismisses it.
public protocol _EphemeralState {}

extension AlertState: _EphemeralState {}
