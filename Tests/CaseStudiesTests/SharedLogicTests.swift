import CaseStudies
import Clocks
import Composable
import Testing
import TestSupport

@MainActor
@Suite(.mainSerialExecutor) struct SharedLogicTests {
  func makeStore() -> TestStoreOf<SharedLogicFeature> {
    TestStore(initialState: SharedLogicFeature.State()) {
      SharedLogicFeature(fetchUserName: { "user \($0)" })
    }
  }

  @Test func methodHelperMutatesAndMergesEffects() async {
    let store = makeStore()
    await store.send(.button1Tapped) { $0.computations = 1 }
    await store.receive(.fetchUserResponse("user 1")) { $0.users = ["user 1"] }
    await store.send(.toggleChanged(true)) {
      $0.isOn = true
      $0.computations = 2
    }
    await store.send(.textFieldChanged("hi")) {
      $0.text = "hi"
      $0.computations = 3
    }
  }

  @Test func mergedHelperEffectsAllRun() async {
    // User 2 answers a second later, so the merged effects arrive in a known order.
    let clock = TestClock()
    let store = TestStore(initialState: SharedLogicFeature.State()) {
      SharedLogicFeature(fetchUserName: { id in
        if id == 2 { try? await clock.sleep(for: .seconds(1)) }
        return "user \(id)"
      })
    }
    await store.send(.button2Tapped) { $0.computations = 1 }
    await store.receive(.fetchUserResponse("user 1")) { $0.users = ["user 1"] }
    await clock.advance(by: .seconds(1))
    await store.receive(.fetchUserResponse("user 2")) { $0.users = ["user 1", "user 2"] }
  }

  @Test func asyncHelperComposesInsideRun() async {
    let store = makeStore()
    await store.send(.button3Tapped)
    await store.receive(.fetchUserResponse("user 1")) { $0.users = ["user 1"] }
    await store.receive(.fetchUserResponse("user 2")) { $0.users = ["user 1", "user 2"] }
  }

  @Test func effectReturningHelperInsideRunNeverRuns() async {
    // The pitfall from the shared-logic article: the helper's inner `.run` is built and thrown away.
    let store = makeStore()
    await store.send(.pitfallButtonTapped)
    await store.finish()
    #expect(store.state.users.isEmpty)
  }
}
