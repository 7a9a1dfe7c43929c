public import Composable
public import Foundation

/// The episodes' favoriting request, as a dependency.
public struct FavoriteClient: Sendable {
  /// Sets the favorite flag of an episode; returns the confirmed flag.
  public var favorite: @Sendable (UUID, Bool) async throws -> Bool

  /// Creates a client.
  ///
  /// - Parameter favorite: The request.
  public init(favorite: @escaping @Sendable (UUID, Bool) async throws -> Bool) {
    self.favorite = favorite
  }
}

extension FavoriteClient: DependencyKey {
  /// Stands in for a server: answers after a second, and fails one request in four.
  public static var liveValue: FavoriteClient {
    @Dependency(\.continuousClock) var clock
    return FavoriteClient { _, isFavorite in
      try await clock.sleep(for: .seconds(1))
      guard Int.random(in: 0..<4) > 0 else { throw FavoritingError("The server is busy.") }
      return isFavorite
    }
  }

  /// Tests must say what the request does.
  public static let testValue = FavoriteClient { _, _ in
    throw FavoritingError("FavoriteClient.favorite is not implemented in this test.")
  }
}

extension DependencyValues {
  /// The favoriting request.
  public var favoriteClient: FavoriteClient {
    get { self[FavoriteClient.self] }
    set { self[FavoriteClient.self] = newValue }
  }
}
