public import Composable

/// Patterns for sharing logic between a reducer's actions, without sending actions to itself.
///
/// - ``sharedComputation(state:)`` is a reducer method returning an ``Effect``: call it from any
///   action, and combine several with `Effect.merge` (button 1 and 2).
/// - ``fetchUser(send:userID:)`` is an async helper taking ``Send``: it composes inside `.run`
///   (button 3) but cannot mutate state.
/// - ``Action/pitfallButtonTapped`` shows what goes wrong when an Effect-returning helper is
///   called inside `.run`: the returned effect is a value nobody runs.
@Reducer
public struct SharedLogicFeature: Sendable {
  /// The feature's state.
  @ObservableState
  public struct State: Equatable {
    /// Changed by the shared computation.
    public var computations = 0
    /// The user id to fetch.
    public var userID = 1
    /// Fetched user names, in order of arrival.
    public var users: [String] = []
    /// The toggle.
    public var isOn = false
    /// The text field.
    public var text = ""

    /// Creates the state.
    public init() {}
  }

  /// The feature's actions.
  public enum Action: Equatable, Sendable {
    /// Runs the shared computation and one fetch.
    case button1Tapped
    /// Runs the shared computation and two fetches, merged.
    case button2Tapped
    /// Runs two fetches in sequence with the async helper.
    case button3Tapped
    /// Calls an Effect-returning helper inside `.run`: its effect never runs.
    case pitfallButtonTapped
    /// The toggle changed; runs the shared computation.
    case toggleChanged(Bool)
    /// The text changed; runs the shared computation.
    case textFieldChanged(String)
    /// A fetch answered.
    case fetchUserResponse(String)
  }

  /// Fetches a user name by id.
  public var fetchUserName: @Sendable (Int) async -> String

  /// Creates the reducer.
  ///
  /// - Parameter fetchUserName: Fetches a user name by id.
  public init(fetchUserName: @escaping @Sendable (Int) async -> String) {
    self.fetchUserName = fetchUserName
  }

  /// Applies an action.
  public func reduce(into state: inout State, action: Action) -> Effect<Action> {
    switch action {
    case .button1Tapped:
      return .merge(sharedComputation(state: &state), fetchUser(id: state.userID))
    case .button2Tapped:
      return .merge(
        sharedComputation(state: &state),
        fetchUser(id: state.userID),
        fetchUser(id: state.userID + 1)
      )
    case .button3Tapped:
      return .run { [userID = state.userID] send in
        await fetchUser(send: send, userID: userID)
        await fetchUser(send: send, userID: userID + 1)
      }
    case .pitfallButtonTapped:
      return .run { [userID = state.userID] _ in
        // The effect built here is returned to nobody, so its `.run` never executes.
        _ = fetchUser(id: userID)
      }
    case let .toggleChanged(isOn):
      state.isOn = isOn
      return sharedComputation(state: &state)
    case let .textFieldChanged(text):
      state.text = text
      return sharedComputation(state: &state)
    case let .fetchUserResponse(name):
      state.users.append(name)
      return .none
    }
  }

  /// Shared logic as a method: mutates state directly, costs no extra action.
  ///
  /// - Parameter state: The state to update.
  /// - Returns: Effects to run (none here; a real computation may return some).
  public func sharedComputation(state: inout State) -> Effect<Action> {
    state.computations += 1
    return .none
  }

  /// Shared logic returning an effect; combine calls with `Effect.merge`.
  ///
  /// - Parameter id: The user to fetch.
  /// - Returns: An effect that sends ``Action/fetchUserResponse(_:)``.
  public func fetchUser(id: Int) -> Effect<Action> {
    .run { send in await fetchUser(send: send, userID: id) }
  }

  /// Shared logic as an async helper for use inside `.run`; it can send, not mutate.
  ///
  /// - Parameters:
  ///   - send: The effect's sender.
  ///   - userID: The user to fetch.
  public func fetchUser(send: Send<Action>, userID: Int) async {
    await send(.fetchUserResponse(await fetchUserName(userID)))
  }
}
