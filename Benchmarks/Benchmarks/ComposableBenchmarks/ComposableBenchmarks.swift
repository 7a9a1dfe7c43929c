import Benchmark
import Composable

/// `Store.send` against the same reducer called directly, in one run: time and allocations per
/// action. Each sample sends many actions on the main actor (a million, a thousand through the
/// nested Scopes, which take microseconds each), so the hop onto it costs nothing per action;
/// the figures are per action.
let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.wallClock, .mallocCountTotal], timeUnits: .nanoseconds, scalingFactor: .mega,
    maxDuration: .seconds(10), maxIterations: 20)

  measure("trivial reducer, called directly") {
    var state = Leaf.State()
    let reducer = Leaf()
    return {
      blackHole(reducer.reduce(into: &state, action: .increment))
      blackHole(state.count)
    }
  }
  measure("trivial reducer, Store.send") {
    let store = Store(initialState: Leaf.State()) { Leaf() }
    return { store.send(.increment) }
  }
  measure("5 nested Scopes, called directly", scaling: .kilo) {
    var state = Nested.State()
    let reducer = Nested()
    return {
      blackHole(reducer.reduce(into: &state, action: Nested.deepAction))
      blackHole(state.child.child.child.child.child.count)
    }
  }
  measure("5 nested Scopes, Store.send", scaling: .kilo) {
    let store = Store(initialState: Nested.State()) { Nested() }
    return { store.send(Nested.deepAction) }
  }
  measure("@ObservableState trivial reducer, called directly") {
    var state = ObservedLeaf.State()
    let reducer = ObservedLeaf()
    return {
      blackHole(reducer.reduce(into: &state, action: .increment))
      blackHole(state.count)
    }
  }
  measure("@ObservableState trivial reducer, Store.send") {
    let store = Store(initialState: ObservedLeaf.State()) { ObservedLeaf() }
    return { store.send(.increment) }
  }
  measure("@ObservableState 5 nested Scopes, Store.send", scaling: .kilo) {
    let store = Store(initialState: ObservedNested.State()) { ObservedNested() }
    return { store.send(ObservedNested.deepAction) }
  }
}

/// A benchmark of the closure that `setUp` makes, on the main actor (where a `Store` lives), set
/// up once per sample, outside the measurement.
func measure(
  _ name: String, scaling: BenchmarkScalingFactor = .mega,
  _ setUp: @escaping @MainActor () -> @MainActor () -> Void
) {
  var configuration = Benchmark.defaultConfiguration
  configuration.scalingFactor = scaling
  Benchmark(name, configuration: configuration) { benchmark async in
    let iterations = benchmark.scaledIterations
    // The benchmark's task waits while the main actor uses it: nothing races.
    nonisolated(unsafe) let measured = benchmark
    await MainActor.run {
      let body = setUp()
      measured.startMeasurement()
      for _ in iterations { body() }
      measured.stopMeasurement()
    }
  }
}

/// A trivial counter.
struct Leaf: Reducer {
  struct State: Equatable { var count = 0 }
  @CasePathable enum Action: Sendable { case increment }
  func reduce(into state: inout State, action: Action) -> Effect<Action> {
    state.count &+= 1
    return .none
  }
}

/// Five levels of `Scope` down to a ``Leaf``.
struct Nested: Reducer {
  static let deepAction = Action.child(.child(.child(.child(.child(.increment)))))

  struct State: Equatable { var child = Level4.State() }
  @CasePathable enum Action: Sendable { case child(Level4.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { Level4() } }
}

struct Level4: Reducer {
  struct State: Equatable { var child = Level3.State() }
  @CasePathable enum Action: Sendable { case child(Level3.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { Level3() } }
}

struct Level3: Reducer {
  struct State: Equatable { var child = Level2.State() }
  @CasePathable enum Action: Sendable { case child(Level2.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { Level2() } }
}

struct Level2: Reducer {
  struct State: Equatable { var child = Level1.State() }
  @CasePathable enum Action: Sendable { case child(Level1.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { Level1() } }
}

struct Level1: Reducer {
  struct State: Equatable { var child = Leaf.State() }
  @CasePathable enum Action: Sendable { case child(Leaf.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { Leaf() } }
}

/// ``Leaf`` written with the macros: every write of `count` goes through its registrar.
@Reducer
struct ObservedLeaf {
  @ObservableState
  struct State: Equatable { var count = 0 }
  enum Action: Sendable { case increment }
  func reduce(into state: inout State, action: Action) -> Effect<Action> {
    state.count &+= 1
    return .none
  }
}

/// Five levels of `Scope` over observable state down to an ``ObservedLeaf``; not generic, like
/// ``Nested``, since a generic feature forms its key paths at run time on every access.
@Reducer
struct ObservedNested {
  static let deepAction = Action.child(.child(.child(.child(.child(.increment)))))
  @ObservableState
  struct State: Equatable { var child = ObservedLevel4.State() }
  enum Action: Sendable { case child(ObservedLevel4.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { ObservedLevel4() } }
}

@Reducer
struct ObservedLevel4 {
  @ObservableState
  struct State: Equatable { var child = ObservedLevel3.State() }
  enum Action: Sendable { case child(ObservedLevel3.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { ObservedLevel3() } }
}

@Reducer
struct ObservedLevel3 {
  @ObservableState
  struct State: Equatable { var child = ObservedLevel2.State() }
  enum Action: Sendable { case child(ObservedLevel2.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { ObservedLevel2() } }
}

@Reducer
struct ObservedLevel2 {
  @ObservableState
  struct State: Equatable { var child = ObservedLevel1.State() }
  enum Action: Sendable { case child(ObservedLevel1.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { ObservedLevel1() } }
}

@Reducer
struct ObservedLevel1 {
  @ObservableState
  struct State: Equatable { var child = ObservedLeaf.State() }
  enum Action: Sendable { case child(ObservedLeaf.Action) }
  var body: some ReducerOf<Self> { Scope(state: \.child, action: \.child) { ObservedLeaf() } }
}
