import CaseStudies
import Clocks
import Composable
import Foundation
import Testing
import TestSupport

@MainActor
@Suite(.mainSerialExecutor) struct FavoritingTests {
  let id = UUID(0)

  @Test func tapTogglesAtOnceAndTheServerConfirms() async {
    let store = TestStore(initialState: EpisodeFeature.State(id: id, title: "Pilot")) {
      EpisodeFeature()
    } withDependencies: {
      $0.favoriteClient.favorite = { _, isFavorite in isFavorite }
    }
    await store.send(.favorite(.buttonTapped)) { $0.isFavorite = true }
    await store.receive(.favorite(.response(.success(true))))
  }

  @Test func failureRevertsAndShowsAnAlert() async {
    let store = TestStore(initialState: EpisodeFeature.State(id: id, title: "Pilot")) {
      EpisodeFeature()
    } withDependencies: {
      $0.favoriteClient.favorite = { _, _ in throw FavoritingError("Offline") }
    }
    await store.send(.favorite(.buttonTapped)) { $0.isFavorite = true }
    await store.receive(.favorite(.response(.failure(FavoritingError("Offline"))))) {
      $0.isFavorite = false
      $0.alert = AlertState(title: "Favoriting failed.", message: "Offline")
    }
    await store.send(.favorite(.alertDismissed)) { $0.alert = nil }
  }

  @Test func secondTapCancelsTheRequestInFlight() async {
    let clock = TestClock()
    let requests = LockIsolated<[Bool]>([])
    let store = TestStore(initialState: EpisodeFeature.State(id: id, title: "Pilot")) {
      EpisodeFeature()
    } withDependencies: {
      $0.favoriteClient.favorite = { _, isFavorite in
        requests.withValue { $0.append(isFavorite) }
        try await clock.sleep(for: .seconds(1))
        return isFavorite
      }
    }
    await store.send(.favorite(.buttonTapped)) { $0.isFavorite = true }
    await store.send(.favorite(.buttonTapped)) { $0.isFavorite = false }
    await clock.advance(by: .seconds(1))
    await store.receive(.favorite(.response(.success(false))))
    #expect(requests.value == [true, false])
  }

  @Test func episodesListRoutesToEachEpisode() async {
    let first = UUID(1)
    let second = UUID(2)
    let store = TestStore(
      initialState: EpisodesFeature.State(episodes: [
        EpisodeFeature.State(id: first, title: "One"),
        EpisodeFeature.State(id: second, title: "Two"),
      ])
    ) {
      EpisodesFeature()
    } withDependencies: {
      $0.favoriteClient.favorite = { id, isFavorite in
        guard id == first else { throw FavoritingError("Nope") }
        return isFavorite
      }
    }
    await store.send(.episodes(.element(id: first, action: .favorite(.buttonTapped)))) {
      $0.episodes[id: first]?.isFavorite = true
    }
    await store.receive(.episodes(.element(id: first, action: .favorite(.response(.success(true))))))
    await store.send(\.episodes[id: second].favorite.buttonTapped) {
      $0.episodes[id: second]?.isFavorite = true
    }
    await store.receive(
      .episodes(.element(id: second, action: .favorite(.response(.failure(FavoritingError("Nope"))))))
    ) {
      $0.episodes[id: second]?.isFavorite = false
      $0.episodes[id: second]?.alert = AlertState(title: "Favoriting failed.", message: "Nope")
    }
  }
}
