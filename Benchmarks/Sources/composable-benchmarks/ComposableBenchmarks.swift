import Composable
import Foundation

/// Prints nanoseconds per `Store.send` next to the cost of calling the reducer directly, measured
/// in the same run so the ratio survives a noisy machine.
@main
enum ComposableBenchmarks {
  @MainActor
  static func main() {
    // Fewer actions (e.g. under valgrind): COMPOSABLE_BENCH_ITERATIONS.
    let iterations = ProcessInfo.processInfo.environment["COMPOSABLE_BENCH_ITERATIONS"].flatMap(Int.init) ?? 1_000_000
    let rounds = 5
    print("Store.send, \(iterations) actions per round, median of \(rounds) rounds (release)")
    print("")
    let direct = measure(rounds: rounds, iterations: iterations) {
      var state = Leaf.State()
      let reducer = Leaf()
      return {
        blackHole(reducer.reduce(into: &state, action: .increment))
        blackHole(state)
      }
    }
    let store = measure(rounds: rounds, iterations: iterations) {
      let store = Store(initialState: Leaf.State()) { Leaf() }
      return { store.send(.increment) }
    }
    let nestedDirect = measure(rounds: rounds, iterations: iterations) {
      var state = Nested.State()
      let reducer = Nested()
      return {
        blackHole(reducer.reduce(into: &state, action: Nested.deepAction))
        blackHole(state)
      }
    }
    let nestedStore = measure(rounds: rounds, iterations: iterations) {
      let store = Store(initialState: Nested.State()) { Nested() }
      return { store.send(Nested.deepAction) }
    }
    let observedDirect = measure(rounds: rounds, iterations: iterations) {
      var state = ObservedLeaf.State()
      let reducer = ObservedLeaf()
      return {
        blackHole(reducer.reduce(into: &state, action: .increment))
        blackHole(state.count)
      }
    }
    let observedStore = measure(rounds: rounds, iterations: iterations) {
      let store = Store(initialState: ObservedLeaf.State()) { ObservedLeaf() }
      return { store.send(.increment) }
    }
    let observedNestedStore = measure(rounds: rounds, iterations: iterations) {
      let store = Store(initialState: ObservedNested.State()) { ObservedNested() }
      return { store.send(ObservedNested.deepAction) }
    }
    let rows = [
      ("trivial reducer, called directly", direct, direct),
      ("trivial reducer, Store.send", store, direct),
      ("5 nested Scopes, called directly", nestedDirect, nestedDirect),
      ("5 nested Scopes, Store.send", nestedStore, nestedDirect),
      ("@ObservableState trivial reducer, called directly", observedDirect, direct),
      ("@ObservableState trivial reducer, Store.send", observedStore, direct),
      ("@ObservableState 5 nested Scopes, Store.send", observedNestedStore, nestedDirect),
    ]
    print("| case | ns/action | vs direct call |")
    print("|---|---:|---:|")
    for (name, nanoseconds, baseline) in rows {
      print(
        "| \(name) | \(String(format: "%.1f", nanoseconds)) | "
          + "\(String(format: "%.1f×", nanoseconds / baseline)) |"
      )
    }
    print("")
    print("Target: trivial Store.send under 500 ns: \(store < 500 ? "met" : "NOT met")")
    print("(checksum \(sink))")
  }

  /// The median nanoseconds per call of the closure that `setUp` returns.
  @MainActor
  static func measure(
    rounds: Int, iterations: Int, _ setUp: () -> () -> Void
  ) -> Double {
    var samples: [Double] = []
    for _ in 0..<rounds {
      let body = setUp()
      for _ in 0..<1_000 { body() }
      let start = ContinuousClock.now
      for _ in 0..<iterations { body() }
      let elapsed = ContinuousClock.now - start
      let nanoseconds =
        Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
      samples.append(nanoseconds / Double(iterations))
    }
    return samples.sorted()[samples.count / 2]
  }
}

/// Keeps the optimizer from deleting the work being measured: every result feeds a global the
/// program prints at the end.
nonisolated(unsafe) var sink = 0

@inline(never)
func blackHole<T>(_ value: T) {
  sink &+= unsafeBitCast(ObjectIdentifier(T.self), to: Int.self) &+ MemoryLayout.size(ofValue: value)
}

@inline(never)
func blackHole(_ state: Leaf.State) {
  sink &+= state.count
}

@inline(never)
func blackHole(_ state: Nested.State) {
  sink &+= state.child.child.child.child.child.count
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
