import Composable
import Dependencies
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Testing

/// A view observing a store sees a write made in another process, with no action sent.
@MainActor
@Suite(.timeLimit(.minutes(1)))
struct StoreObservationTests {
  @Test func aWriteFromAnotherProcessRendersTheViewAgain() async throws {
    try await withBrokerFixture { fixture in
      let here = fixture.makeClient()
      let there = fixture.makeClient()
      let store = Store(initialState: Scoreboard.State()) {
        Scoreboard()
      } withDependencies: {
        $0.brokerClient = here
      }
      let theirs = withDependencies {
        $0.brokerClient = there
        $0.persistentReferences = PersistentReferences()
      } operation: {
        Shared(wrappedValue: 0, .broker("score"))
      }
      try await here.waitUntilConnected()
      try await there.waitUntilConnected()

      let (renders, rendered) = AsyncStream<Int>.makeStream()
      let view = observe { rendered.yield(store.score) }
      theirs.withLock { $0 = 42 }
      var shown: [Int] = []
      for await score in renders {
        shown.append(score)
        if score == 42 { break }
      }
      #expect(shown.last == 42)
      view.cancel()
    }
  }
}

/// A feature whose state holds a mirrored value.
@Reducer
private struct Scoreboard {
  @ObservableState
  struct State {
    @Shared(.broker("score")) var score = 0
    var title = "Score"
  }

  enum Action { case retitle(String) }

  func reduce(into state: inout State, action: Action) -> Effect<Action> {
    if case .retitle(let title) = action { state.title = title }
    return .none
  }
}
