import Clocks
import Composable
import Testing
import TestSupport

@MainActor
@Suite(.mainSerialExecutor) struct EffectTests {
  @Test func cancelInFlightKeepsOnlyTheLatest() async {
    let clock = TestClock()
    let store = TestStore(initialState: Counter.State()) {
      Counter()
    } withDependencies: {
      $0.continuousClock = clock
    }
    await store.send(.delayedIncrement)
    await clock.advance(by: .milliseconds(500))
    await store.send(.delayedIncrement)
    await clock.advance(by: .milliseconds(500))
    // The first one was cancelled by the second: nothing yet.
    await clock.advance(by: .milliseconds(500))
    await store.receive(\.delayedIncrementFinished) { $0.count = 1 }
    await store.finish()
  }

  @Test func cancelByID() async {
    let clock = TestClock()
    let store = TestStore(initialState: Counter.State()) {
      Counter()
    } withDependencies: {
      $0.continuousClock = clock
    }
    await store.send(.delayedIncrement)
    await store.send(.cancelDelayed)
    // Had the effect survived, this would deliver an action the test never asserts.
    await clock.advance(by: .seconds(2))
    await store.finish()
  }

  @Test func concatenateRunsInOrder() async {
    let store = TestStore(initialState: Counter.State()) {
      Reduce<Counter.State, Counter.Action> { state, action in
        switch action {
        case .increment:
          return .concatenate(
            .run { send in await send(.log("first")) },
            .send(.log("second")),
            .run { send in await send(.log("third")) }
          )
        case let .log(message):
          state.log.append(message)
          return .none
        default:
          return .none
        }
      }
    }
    await store.send(.increment)
    await store.receive(.log("first")) { $0.log = ["first"] }
    await store.receive(.log("second")) { $0.log = ["first", "second"] }
    await store.receive(.log("third")) { $0.log = ["first", "second", "third"] }
  }

  @Test func mapEmbedsActions() async {
    enum Outer: Equatable, Sendable { case inner(Counter.Action) }
    let store = TestStore(initialState: [Outer]()) {
      Reduce<[Outer], Outer> { state, action in
        state.append(action)
        guard action == .inner(.decrement) else { return .none }
        return Effect<Counter.Action>.run { send in await send(.increment) }.map(Outer.inner)
      }
    }
    await store.send(.inner(.decrement)) { $0 = [.inner(.decrement)] }
    await store.receive(.inner(.increment)) { $0.append(.inner(.increment)) }
  }

  @Test func debounceWaitsForQuiet() async {
    let clock = TestClock()
    let store = TestStore(initialState: Counter.State()) {
      Reduce<Counter.State, Counter.Action> { state, action in
        switch action {
        case let .log(message) where message.hasPrefix("typed"):
          return Effect.send(.log("search")).debounce(id: "search", for: .seconds(1), clock: clock)
        case let .log(message):
          state.log.append(message)
          return .none
        default:
          return .none
        }
      }
    }
    await store.send(.log("typed a"))
    await clock.advance(by: .milliseconds(600))
    await store.send(.log("typed b"))
    await clock.advance(by: .milliseconds(600))
    await store.send(.log("typed c"))
    await clock.advance(by: .seconds(1))
    await store.receive(.log("search")) { $0.log = ["search"] }
  }

  @Test func throttleDropsWithinTheWindow() async {
    let clock = TestClock()
    let store = TestStore(initialState: Counter.State()) {
      Reduce<Counter.State, Counter.Action> { state, action in
        switch action {
        case .increment:
          return Effect.send(.log("fired")).throttle(id: "t", for: .seconds(1), clock: clock)
        case let .log(message):
          state.log.append(message)
          return .none
        default:
          return .none
        }
      }
    }
    await store.send(.increment)
    await store.receive(.log("fired")) { $0.log = ["fired"] }
    await store.send(.increment)  // inside the window: dropped
    await clock.advance(by: .seconds(1))
    await store.send(.increment)
    await store.receive(.log("fired")) { $0.log = ["fired", "fired"] }
    await clock.advance(by: .seconds(1))
    await store.finish()
  }

  @Test func runCatchHandlesErrors() async {
    let store = TestStore(initialState: Counter.State()) {
      Reduce<Counter.State, Counter.Action> { state, action in
        switch action {
        case .increment:
          return .run { _ in throw Counter.CounterError() } catch: { _, send in
            await send(.log("caught"))
          }
        case let .log(message):
          state.log.append(message)
          return .none
        default:
          return .none
        }
      }
    }
    await store.send(.increment)
    await store.receive(.log("caught")) { $0.log = ["caught"] }
  }

  @Test func unhandledRunErrorIsReported() async {
    let store = Store(initialState: Counter.State()) { Counter() }
    await withKnownIssue {
      await store.send(.failingEffect).finish()
    } matching: { issue in
      issue.description.contains("threw an unhandled error")
    }
  }

  @Test func publisherEffectDeliversSynchronously() {
    let subject = PassthroughSubject<Counter.Action, Never>()
    let store = Store(initialState: Counter.State()) {
      Reduce<Counter.State, Counter.Action> { state, action in
        switch action {
        case .log("subscribe"):
          return .publisher { subject }
        case .increment:
          state.count += 1
          return .none
        default:
          return .none
        }
      }
    }
    let task = store.send(.log("subscribe"))
    subject.send(.increment)
    subject.send(.increment)
    #expect(store.count == 2)
    subject.send(completion: .finished)
    #expect(task.isFinished)
  }
}
