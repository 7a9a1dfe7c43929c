/// A type that evolves a feature's state when an action arrives and describes the effects to
/// run next.
///
/// Conform with the ``Reducer()`` macro and implement ``body`` (or ``reduce(into:action:)`` for
/// leaf logic), exactly as in The Composable Architecture:
///
/// ```swift
/// @Reducer
/// struct Counter {
///   @ObservableState
///   struct State: Equatable { var count = 0 }
///   enum Action { case incrementButtonTapped }
///   var body: some ReducerOf<Self> {
///     Reduce { state, action in
///       state.count += 1
///       return .none
///     }
///   }
/// }
/// ```
public protocol Reducer<State, Action> {
  /// The state the reducer evolves.
  associatedtype State
  /// The actions the reducer handles.
  associatedtype Action
  /// The type of ``body``; `Never` for reducers that implement
  /// ``Reducer/reduce(into:action:)``.
  associatedtype Body

  /// Evolves `state` for `action` and returns the effects to run.
  ///
  /// - Parameters:
  ///   - state: The current state, mutated in place.
  ///   - action: The action to handle.
  /// - Returns: The effects to run, or ``Effect/none``.
  func reduce(into state: inout State, action: Action) -> Effect<Action>

  /// The reducer's logic, composed from other reducers.
  @ReducerBuilder<State, Action>
  var body: Body { get }
}

/// A convenience for naming a reducer by the feature it implements: `some ReducerOf<Self>`.
public typealias ReducerOf<R: Reducer> = Reducer<R.State, R.Action>

extension Reducer where Body == Never {
  /// A reducer that implements ``reduce(into:action:)`` has no body; reaching it is a bug.
  public var body: Body {
    fatalError(
      """
      '\(Self.self)' has no body. Implement either 'reduce(into:action:)' or 'body', not neither.
      """
    )
  }
}

extension Reducer where Body: Reducer, Body.State == State, Body.Action == Action {
  /// Runs ``body``.
  ///
  /// - Parameters:
  ///   - state: The current state.
  ///   - action: The action.
  /// - Returns: The effects of the body.
  @inlinable
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    body.reduce(into: &state, action: action)
  }
}
