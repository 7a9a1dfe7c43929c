public import CasePaths
public import Dependencies
internal import Observation

/// The runtime of a feature: holds its state, runs its reducer for each action, and executes the
/// effects the reducer returns.
///
/// ```swift
/// let store = Store(initialState: Counter.State()) { Counter() }
/// store.send(.incrementButtonTapped)
/// print(store.count)   // 1
/// ```
///
/// Actions sent while the store is already handling one (from an observer, or a synchronous
/// ``Effect/send(_:)``) are buffered and run afterwards in order, never re-entrantly. Effects are
/// cancelled when the last store of the tree goes away.
@MainActor
@dynamicMemberLookup
public final class Store<State, Action> {
  private let root: AnyObject
  private let readState: @MainActor () -> State
  private let sendAction: @MainActor (Action) -> EffectHandle?
  private let addObserver: @MainActor (@escaping @MainActor () -> Void) -> Int
  private let removeObserver: @MainActor (Int) -> Void
  private let _$observationRegistrar = ObservationRegistrar()
  private var identityObserver: Int?
  /// Whether `state` was read since Observation was last told of a change: only then can a
  /// view be tracking it. Telling Observation costs about a microsecond, several times a
  /// whole send, so a store that nobody reads does not pay it.
  private var stateWasRead = false

  /// Creates a store for a reducer.
  ///
  /// - Parameters:
  ///   - initialState: The state to start from.
  ///   - reducer: The feature's reducer.
  ///   - prepareDependencies: Overrides dependencies for the reducer and its effects.
  public convenience init<R: Reducer>(
    initialState: @autoclosure () -> R.State,
    @ReducerBuilder<State, Action> reducer: () -> R,
    withDependencies prepareDependencies: ((inout DependencyValues) -> Void)? = nil
  ) where R.State == State, R.Action == Action {
    // Through `withDependencies`, so that overriding a dependency that has no test value
    // (`$0.numberFact.fetch = …`) is not reported as using it. Stack element ids count from 0
    // in each store.
    let dependencies = withDependencies {
      $0.stackElementID = StackElementIDGenerator()
      prepareDependencies?(&$0)
    } operation: {
      DependencyValues._current
    }
    let (state, reducer) = DependencyValues.$_current.withValue(dependencies) {
      (initialState(), reducer())
    }
    self.init(
      root: RootStore(
        initialState: state,
        reduce: { state, action in reducer.reduce(into: &state, action: action) },
        dependencies: dependencies
      )
    )
  }

  init(root: RootStore<State, Action>) {
    self.root = root
    readState = { root.state }
    sendAction = { root.send($0) }
    addObserver = { root.addObserver($0) }
    removeObserver = { root.removeObserver($0) }
    observeIdentity()
  }

  private init(
    root: AnyObject,
    readState: @escaping @MainActor () -> State,
    sendAction: @escaping @MainActor (Action) -> EffectHandle?,
    addObserver: @escaping @MainActor (@escaping @MainActor () -> Void) -> Int,
    removeObserver: @escaping @MainActor (Int) -> Void
  ) {
    self.root = root
    self.readState = readState
    self.sendAction = sendAction
    self.addObserver = addObserver
    self.removeObserver = removeObserver
    observeIdentity()
  }

  isolated deinit {
    if let identityObserver { removeObserver(identityObserver) }
  }

  /// Tells Observation that `state` changed when an action or an outside change gave the state
  /// another identity. Changes within the same ``ObservableState`` value reach observers
  /// through its own tracked properties; a state that is not observable changes on every send.
  private func observeIdentity() {
    let identity = Self.identityReader()
    var last = identity?(readState())
    identityObserver = addObserver { [weak self] in
      guard let self else { return }
      guard stateWasRead else { return }
      if let identity {
        let id = identity(readState())
        guard id != last else { return }
        last = id
      }
      stateWasRead = false
      _$observationRegistrar.withMutation(of: self, keyPath: \.state) {}
    }
  }

  /// The current state. Reading it inside ``observe(_:)`` tracks it, and with
  /// ``ObservableState()`` state only the properties read.
  public var state: State {
    stateWasRead = true
    _$observationRegistrar.access(self, keyPath: \.state)
    return readState()
  }

  /// Reads a property of the current state: `store.count`.
  public subscript<Value>(dynamicMember keyPath: KeyPath<State, Value>) -> Value {
    state[keyPath: keyPath]
  }

  /// Sends an action: the reducer runs now and the effects it returns start.
  ///
  /// - Parameter action: The action.
  /// - Returns: A task for the effects started by this action (and the actions it caused
  ///   synchronously).
  @discardableResult
  public func send(_ action: Action) -> StoreTask {
    StoreTask(handle: sendAction(action))
  }

  /// Derives a store for a child feature: it reads the parent's state through `toChildState`
  /// and sends child actions embedded in parent actions.
  ///
  /// - Parameters:
  ///   - toChildState: A key path to the child's state.
  ///   - toChildAction: A case key path to the child's actions.
  /// - Returns: A child store that follows the parent.
  public func scope<ChildState, ChildAction>(
    state toChildState: KeyPath<State, ChildState>,
    action toChildAction: CaseKeyPath<Action, ChildAction>
  ) -> Store<ChildState, ChildAction> where Action: CasePathable {
    let readState = self.readState
    let sendAction = self.sendAction
    let embed = CasePathCache.casePath(toChildAction)
    return Store<ChildState, ChildAction>(
      root: root,
      readState: { readState()[keyPath: toChildState] },
      sendAction: { sendAction(embed.embed($0)) },
      addObserver: addObserver,
      removeObserver: removeObserver
    )
  }

  /// Derives a store for optional child state, such as a presented feature:
  /// `store.scope(state: \.destination?.detail, action: \.destination.detail)`.
  ///
  /// Once the child state is gone, the child store keeps showing its last value, and actions
  /// sent to it reach the parent's reducer, which reports them.
  ///
  /// - Parameters:
  ///   - toChildState: A key path to the optional child state.
  ///   - toChildAction: A case key path to the child's actions.
  /// - Returns: A child store, or `nil` when there is no child state now.
  public func scope<ChildState, ChildAction>(
    state toChildState: KeyPath<State, ChildState?>,
    action toChildAction: CaseKeyPath<Action, ChildAction>
  ) -> Store<ChildState, ChildAction>? where Action: CasePathable {
    guard var last = readState()[keyPath: toChildState] else { return nil }
    let readState = self.readState
    let sendAction = self.sendAction
    let embed = CasePathCache.casePath(toChildAction)
    return Store<ChildState, ChildAction>(
      root: root,
      readState: {
        if let current = readState()[keyPath: toChildState] { last = current }
        return last
      },
      sendAction: { sendAction(embed.embed($0)) },
      addObserver: addObserver,
      removeObserver: removeObserver
    )
  }

  // MARK: - Observing

  /// Calls `onChange` with the observed part of the state now, then each time it changes.
  ///
  /// The observer runs after an action finished reducing, or after a `@Shared` value held in the
  /// state changed elsewhere; it is skipped when `isDuplicate` says nothing changed. This is the
  /// `ViewStore(store, observe:removeDuplicates:)` idea: a view re-renders only for what it shows.
  ///
  /// ```swift
  /// let token = store.observe(\.count) { count in render(count) }
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Picks the observed part of the state.
  ///   - isDuplicate: Whether two observed values count as the same.
  ///   - onChange: Receives the observed value.
  /// - Returns: A token; observing stops when it is cancelled or released.
  public func observe<Value>(
    _ transform: @escaping (State) -> Value,
    removeDuplicates isDuplicate: @escaping (Value, Value) -> Bool,
    onChange: @escaping @MainActor (Value) -> Void
  ) -> StoreObservation {
    var last = transform(readState())
    onChange(last)
    let readState = self.readState
    let id = addObserver {
      let value = transform(readState())
      guard !isDuplicate(last, value) else { return }
      last = value
      onChange(value)
    }
    let removeObserver = self.removeObserver
    let root = self.root
    return StoreObservation {
      withExtendedLifetime(root) { removeObserver(id) }
    }
  }

  /// Calls `onChange` with the observed part of the state now, then each time it changes (by
  /// `==`).
  ///
  /// - Parameters:
  ///   - transform: Picks the observed part of the state.
  ///   - onChange: Receives the observed value.
  /// - Returns: A token; observing stops when it is cancelled or released.
  public func observe<Value: Equatable>(
    _ transform: @escaping (State) -> Value,
    onChange: @escaping @MainActor (Value) -> Void
  ) -> StoreObservation {
    observe(transform, removeDuplicates: { $0 == $1 }, onChange: onChange)
  }

  /// The observed part of the state as an asynchronous sequence: the current value, then each
  /// distinct change.
  ///
  /// - Parameter transform: Picks the observed part of the state.
  /// - Returns: A stream that ends when the consuming task is cancelled.
  public func values<Value: Equatable & Sendable>(
    of transform: @escaping (State) -> Value
  ) -> AsyncStream<Value> {
    let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(1))
    let token = observe(transform) { continuation.yield($0) }
    let box = ObservationBox(token)
    continuation.onTermination = { _ in Task { @MainActor in box.token.cancel() } }
    return stream
  }
}

/// Keeps an observation alive for as long as its stream is consumed.
@MainActor
private final class ObservationBox: Sendable {
  let token: StoreObservation
  init(_ token: StoreObservation) { self.token = token }
}

/// A convenience for naming a store by its feature's reducer: `StoreOf<Counter>`.
public typealias StoreOf<R: Reducer> = Store<R.State, R.Action>

/// A running observation of a ``Store``; observing stops on ``cancel()`` or when released.
@MainActor
public final class StoreObservation {
  private var onCancel: (@MainActor () -> Void)?

  init(onCancel: @escaping @MainActor () -> Void) {
    self.onCancel = onCancel
  }

  isolated deinit {
    cancel()
  }

  /// Stops observing.
  public func cancel() {
    onCancel?()
    onCancel = nil
  }
}
