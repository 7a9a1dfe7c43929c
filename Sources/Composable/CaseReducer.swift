/// A `@Reducer enum` of destinations: its `body` is static, built from its cases.
///
/// ``Reducer()`` conforms such an enum; see ``Reducer/ifLet(_:action:fileID:filePath:line:column:)``.
public protocol CaseReducer<State, Action>: Reducer
where State: CaseReducerState, Body: Reducer, Body.State == State, Body.Action == Action {
  // Restated so the compiler infers them from the enum's nested types and static `body`.
  associatedtype State = State
  associatedtype Action = Action
  associatedtype Body = Body

  /// The reducer of every case, scoped to it.
  @ReducerBuilder<State, Action>
  static var body: Body { get }
}

extension CaseReducer {
  /// The static ``body``.
  public var body: Body { Self.body }
}

/// The `State` enum of a ``CaseReducer``, which names its reducer.
public protocol CaseReducerState {
  /// The `@Reducer enum` this is the state of.
  associatedtype StateReducer: CaseReducer where StateReducer.State == Self
}
