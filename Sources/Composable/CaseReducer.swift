/// A `@Reducer enum` of destinations: its `body` is static, built from its cases.
///
/// ``Reducer()`` conforms such an enum; see
/// ``Reducer/ifLet(_:action:fileID:filePath:line:column:)->PresentationReducer<Self,DestinationState.StateReducer.Body>``.
public protocol CaseReducer<State, Action>: Reducer
where State: CaseReducerState, Body: Reducer, Body.State == State, Body.Action == Action {
  // Restated so the compiler infers them from the enum's nested types and static `body`.
  associatedtype State = State
  associatedtype Action = Action
  associatedtype Body = Body

  /// The reducer of every case, scoped to it.
  @ReducerBuilder<State, Action>
  static var body: Body { get }

  /// An enum with a case per case of the reducer, holding a store of it (or, for an alert, its
  /// state); what `store.case` returns.
  associatedtype CaseScope

  /// The case a store of this enum is in, with a store scoped to it.
  ///
  /// - Parameter store: A store of the enum.
  /// - Returns: The current case.
  @MainActor static func scope(_ store: Store<State, Action>) -> CaseScope
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

extension Store where State: CaseReducerState, State.StateReducer.Action == Action {
  /// The case the state is in, with a store scoped to it, for a `@Reducer enum`'s store:
  ///
  /// ```swift
  /// switch store.case {
  /// case .counter(let store): render(counter: store)
  /// case .detail(let store): render(detail: store)
  /// }
  /// ```
  public var `case`: State.StateReducer.CaseScope {
    State.StateReducer.scope(self)
  }
}
