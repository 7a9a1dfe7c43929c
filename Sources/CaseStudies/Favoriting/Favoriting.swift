public import Composable
import Foundation

/// The state a favoriting button needs, for any kind of identified item: the reusable part of
/// the Favoriting case study.
public struct FavoritingState<ID: Hashable & Sendable>: Equatable {
  /// The failure alert, while shown.
  public var alert: AlertState<FavoritingAction>?
  /// The item's identity, passed to the request.
  public let id: ID
  /// Whether the item is a favorite (updated at once when tapped).
  public var isFavorite: Bool

  /// Creates the state.
  public init(alert: AlertState<FavoritingAction>? = nil, id: ID, isFavorite: Bool) {
    self.alert = alert
    self.id = id
    self.isFavorite = isFavorite
  }
}

/// What happens to a favoriting button.
@CasePathable
public enum FavoritingAction: Equatable, Sendable {
  /// The failure alert was dismissed.
  case alertDismissed
  /// The button was tapped.
  case buttonTapped
  /// The request answered: the confirmed favorite flag, or a failure message.
  case response(Result<Bool, FavoritingError>)
}

/// A failed favoriting request, as the alert shows it.
public struct FavoritingError: Error, Equatable, Sendable {
  /// What went wrong.
  public let message: String

  /// Creates an error.
  public init(_ message: String) {
    self.message = message
  }

  init(_ error: any Error) {
    message = (error as? FavoritingError)?.message ?? "\(error)"
  }
}

/// Reusable favoriting logic: a tap flips `isFavorite` at once and sends the request; a failure
/// flips it back and shows an alert; a second tap cancels the request in flight.
@Reducer
public struct Favoriting<ID: Hashable & Sendable> {
  /// Asks the server to set the favorite flag of an item; returns the confirmed flag.
  public let request: @Sendable (ID, Bool) async throws -> Bool

  /// Creates the reducer.
  ///
  /// - Parameter request: The favoriting request.
  public init(request: @escaping @Sendable (ID, Bool) async throws -> Bool) {
    self.request = request
  }

  private struct CancelID: Hashable, Sendable {
    let id: ID
  }

  /// Applies a favoriting action.
  public func reduce(
    into state: inout FavoritingState<ID>, action: FavoritingAction
  ) -> Effect<FavoritingAction> {
    switch action {
    case .alertDismissed:
      state.alert = nil
      return .none
    case .buttonTapped:
      state.isFavorite.toggle()
      let (id, isFavorite, request) = (state.id, state.isFavorite, request)
      return .run { send in
        await send(.response(Result { try await request(id, isFavorite) }.mapError(FavoritingError.init)))
      }
      .cancellable(id: CancelID(id: state.id), cancelInFlight: true)
    case let .response(.success(isFavorite)):
      state.isFavorite = isFavorite
      return .none
    case let .response(.failure(error)):
      state.isFavorite.toggle()
      state.alert = AlertState(title: "Favoriting failed.", message: error.message)
      return .none
    }
  }
}

extension Reducer {
  /// Enhances this reducer with favoriting, as the original example's
  /// `reducer.favorite(state:action:…)` did.
  ///
  /// - Parameters:
  ///   - toFavoritingState: Where the favoriting state lives (a computed property works).
  ///   - toFavoritingAction: Which actions are favoriting actions.
  ///   - request: The favoriting request.
  /// - Returns: This reducer plus favoriting.
  public func favorite<ID: Hashable & Sendable>(
    state toFavoritingState: WritableKeyPath<State, FavoritingState<ID>>,
    action toFavoritingAction: CaseKeyPath<Action, FavoritingAction>,
    request: @escaping @Sendable (ID, Bool) async throws -> Bool
  ) -> some Reducer<State, Action> {
    CombineReducers {
      Scope(state: toFavoritingState, action: toFavoritingAction) {
        Favoriting(request: request)
      }
      self
    }
  }
}
