public import Composable
public import Foundation

/// One episode with a favorite button, built on the reusable ``Favoriting`` logic, which any
/// feature with an identified item can add with `favorite(state:action:request:)`.
@Reducer
public struct EpisodeFeature {
  /// An episode.
  @ObservableState
  public struct State: Equatable, Identifiable {
    /// The favoriting failure alert.
    public var alert: AlertState<FavoritingAction>?
    /// The episode's identity.
    public let id: UUID
    /// Whether it is a favorite.
    public var isFavorite: Bool
    /// Its title.
    public let title: String

    /// Creates an episode.
    public init(id: UUID, title: String, isFavorite: Bool = false) {
      self.id = id
      self.title = title
      self.isFavorite = isFavorite
    }

    /// The favoriting view of this episode, a computed property as in the original example:
    /// it reads and writes the episode's own `alert` and `isFavorite`.
    public var favorite: FavoritingState<UUID> {
      get { FavoritingState(alert: alert, id: id, isFavorite: isFavorite) }
      set { (alert, isFavorite) = (newValue.alert, newValue.isFavorite) }
    }
  }

  /// What happens to an episode.
  public enum Action: Equatable, Sendable {
    /// A favoriting action.
    case favorite(FavoritingAction)
  }

  @Dependency(\.favoriteClient) var favoriteClient

  /// Creates the reducer.
  public init() {}

  /// Favoriting is all an episode does.
  public var body: some ReducerOf<Self> {
    EmptyReducer()
      .favorite(state: \.favorite, action: \.favorite, request: favoriteClient.favorite)
  }
}
