public import Composable

/// A list of episodes, each with its own favorite button (the Favoriting case study).
@Reducer
public struct EpisodesFeature {
  /// The list.
  @ObservableState
  public struct State: Equatable {
    /// The episodes, by id.
    public var episodes: IdentifiedArrayOf<EpisodeFeature.State>

    /// Creates the list.
    public init(episodes: IdentifiedArrayOf<EpisodeFeature.State>) {
      self.episodes = episodes
    }
  }

  /// What happens in the list.
  public enum Action: Equatable, Sendable {
    /// An action of one episode.
    case episodes(IdentifiedActionOf<EpisodeFeature>)
  }

  /// Creates the reducer.
  public init() {}

  /// Each episode runs its own reducer.
  public var body: some ReducerOf<Self> {
    EmptyReducer()
      .forEach(\.episodes, action: \.episodes) { EpisodeFeature() }
  }
}
