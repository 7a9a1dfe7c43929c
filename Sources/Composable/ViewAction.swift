/// An action enum with a case for what its view does, kept apart from the feature's internal
/// actions: `case view(View)`.
///
/// ```swift
/// enum Action: ViewAction {
///   case loginResponse(Bool)
///   case view(View)
///   enum View { case loginButtonTapped }
/// }
/// ```
///
/// A type marked ``ViewAction(for:)`` then sends view actions with `send(.loginButtonTapped)`.
public protocol ViewAction<ViewAction> {
  /// The view's actions.
  associatedtype ViewAction

  /// Embeds a view action: the `case view(View)` of the enum.
  ///
  /// - Parameter action: The view action.
  /// - Returns: The action.
  static func view(_ action: ViewAction) -> Self
}
