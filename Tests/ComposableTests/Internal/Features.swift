import Composable

/// A counter with effects of every kind, used across the Composable tests.
@Reducer
struct Counter {
  @ObservableState
  struct State: Equatable {
    var count = 0
    var log: [String] = []
  }
  enum Action: Equatable, Sendable {
    case increment
    case decrement
    case incrementTwiceViaSend
    case delayedIncrement
    case delayedIncrementFinished
    case cancelDelayed
    case log(String)
    case failingEffect
  }

  enum CancelID: Hashable, Sendable { case delay }

  @Dependency(\.continuousClock) var clock

  func reduce(into state: inout State, action: Action) -> Effect<Action> {
    switch action {
    case .increment:
      state.count += 1
      return .none
    case .decrement:
      state.count -= 1
      return .none
    case .incrementTwiceViaSend:
      state.log.append("twice")
      return .merge(.send(.increment), .send(.increment))
    case .delayedIncrement:
      return .run { [clock] send in
        try await clock.sleep(for: .seconds(1))
        await send(.delayedIncrementFinished)
      }
      .cancellable(id: CancelID.delay, cancelInFlight: true)
    case .delayedIncrementFinished:
      state.count += 1
      return .none
    case .cancelDelayed:
      return .cancel(id: CancelID.delay)
    case let .log(message):
      state.log.append(message)
      return .none
    case .failingEffect:
      return .run { _ in throw CounterError() }
    }
  }

  struct CounterError: Error {}
}
