/// An action with a case that carries a ``BindingAction`` of the feature's state, so that any
/// field can be set from outside and applied by ``BindingReducer``.
///
/// ```swift
/// @Reducer
/// struct Settings {
///   @ObservableState
///   struct State: Equatable { var name = "" }
///   enum Action: BindableAction {
///     case binding(BindingAction<State>)
///   }
///   var body: some ReducerOf<Self> {
///     BindingReducer()
///   }
/// }
/// ```
public protocol BindableAction {
  /// The state that binding actions set.
  associatedtype State

  /// Embeds a binding action: the `case binding(BindingAction<State>)` of the enum.
  ///
  /// - Parameter action: The binding action.
  /// - Returns: The action.
  static func binding(_ action: BindingAction<State>) -> Self

  /// The binding action this action carries, if it is one.
  var binding: BindingAction<State>? { get }
}

extension BindableAction {
  /// The binding action this action carries: the payload of its `binding` case.
  public var binding: BindingAction<State>? {
    // Reflection, because nothing else reaches a case of an unknown enum by name.
    guard let child = Mirror(reflecting: self).children.first, child.label == "binding" else {
      return nil
    }
    return child.value as? BindingAction<State>
  }

  /// An action that sets `keyPath` to `value`: `store.send(.set(\.name, "Blob"))`.
  ///
  /// - Parameters:
  ///   - keyPath: The field.
  ///   - value: Its new value.
  /// - Returns: A binding action.
  public static func set<Value: Equatable & Sendable>(
    _ keyPath: WritableKeyPath<State, Value>, _ value: Value
  ) -> Self {
    .binding(.set(keyPath, value))
  }
}
