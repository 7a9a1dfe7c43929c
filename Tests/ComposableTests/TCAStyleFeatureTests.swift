import Composable
import TestSupport
import Testing

/// The feature of TCA's README, with only its import changed: a dependency, an effect, an
/// exhaustive test that receives by case key path.
@Reducer
struct NumberFactFeature {
  @ObservableState
  struct State: Equatable {
    var count = 0
    var numberFact: String?
  }

  enum Action {
    case decrementButtonTapped
    case incrementButtonTapped
    case numberFactButtonTapped
    case numberFactResponse(String)
  }

  @Dependency(\.numberFact) var numberFact

  var body: some ReducerOf<Self> {
    Reduce { state, action in
      switch action {
      case .decrementButtonTapped:
        state.count -= 1
        return .none

      case .incrementButtonTapped:
        state.count += 1
        return .none

      case .numberFactButtonTapped:
        return .run { [count = state.count] send in
          let fact = try await self.numberFact.fetch(count)
          await send(.numberFactResponse(fact))
        }

      case .numberFactResponse(let fact):
        state.numberFact = fact
        return .none
      }
    }
  }
}

struct NumberFactClient {
  var fetch: @Sendable (Int) async throws -> String
}

extension NumberFactClient: DependencyKey {
  static let liveValue = Self { number in "\(number) is a number." }
}

extension DependencyValues {
  var numberFact: NumberFactClient {
    get { self[NumberFactClient.self] }
    set { self[NumberFactClient.self] = newValue }
  }
}

@MainActor
@Suite(.mainSerialExecutor) struct TCAStyleFeatureTests {
  @Test func basics() async {
    let store = TestStore(initialState: NumberFactFeature.State()) {
      NumberFactFeature()
    } withDependencies: {
      $0.numberFact.fetch = { "\($0) is a good number Brent" }
    }

    await store.send(.incrementButtonTapped) {
      $0.count = 1
    }
    await store.send(.decrementButtonTapped) {
      $0.count = 0
    }
    await store.send(.numberFactButtonTapped)
    await store.receive(\.numberFactResponse) {
      $0.numberFact = "0 is a good number Brent"
    }
  }
}
