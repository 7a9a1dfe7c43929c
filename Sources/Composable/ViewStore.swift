public import OpenCombine

/// The observed part of a store's state, for code written in the `ViewStore` era, before
/// `@ObservableState`: it follows the store, skipping values that `isDuplicate` calls the same,
/// and publishes each new one. A view re-renders only when what it shows changed.
///
/// ```swift
/// let viewStore = ViewStore(store, observe: \.count)
/// let subscription = viewStore.publisher.sink { render($0) }
/// viewStore.send(.incrementButtonTapped)
/// ```
///
/// New code reads the store inside ``observe(_:)`` instead.
@MainActor
@dynamicMemberLookup
public final class ViewStore<ViewState, ViewAction> {
  private let subject: CurrentValueSubject<ViewState, Never>
  private let sendAction: @MainActor (ViewAction) -> StoreTask
  private var observation: StoreObservation?

  /// Observes `store` through `toViewState`.
  ///
  /// - Parameters:
  ///   - store: The store.
  ///   - toViewState: Picks what the view shows.
  ///   - isDuplicate: Whether two view states count as the same.
  public init<State>(
    _ store: Store<State, ViewAction>,
    observe toViewState: @escaping (State) -> ViewState,
    removeDuplicates isDuplicate: @escaping (ViewState, ViewState) -> Bool
  ) {
    subject = CurrentValueSubject(toViewState(store.state))
    sendAction = { store.send($0) }
    observation = store.observe(toViewState, removeDuplicates: isDuplicate) {
      [weak self] value in self?.subject.send(value)
    }
  }

  /// Observes `store` through `toViewState`, skipping equal values.
  ///
  /// - Parameters:
  ///   - store: The store.
  ///   - toViewState: Picks what the view shows.
  public convenience init<State>(
    _ store: Store<State, ViewAction>,
    observe toViewState: @escaping (State) -> ViewState
  ) where ViewState: Equatable {
    self.init(store, observe: toViewState, removeDuplicates: { $0 == $1 })
  }

  /// The current view state.
  public var state: ViewState { subject.value }

  /// The view state now, then each distinct change.
  public var publisher: AnyPublisher<ViewState, Never> { subject.eraseToAnyPublisher() }

  /// Reads a property of the view state: `viewStore.count`.
  public subscript<Value>(dynamicMember keyPath: KeyPath<ViewState, Value>) -> Value {
    subject.value[keyPath: keyPath]
  }

  /// Sends an action to the store.
  ///
  /// - Parameter action: The action.
  /// - Returns: A task for the effects it started.
  @discardableResult
  public func send(_ action: ViewAction) -> StoreTask {
    sendAction(action)
  }
}

/// A view store of a whole feature's state: `ViewStoreOf<Counter>`.
public typealias ViewStoreOf<R: Reducer> = ViewStore<R.State, R.Action>
