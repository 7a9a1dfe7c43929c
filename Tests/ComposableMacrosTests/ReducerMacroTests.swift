import ComposableMacros
import MacroTesting
import Testing

@Suite(.macros([ReducerMacro.self]))
struct ReducerMacroTests {
  @Test func aFeatureStructConformsAndGetsCasePathsAndABuilder() {
    assertMacro {
      """
      @Reducer
      struct Counter {
        @ObservableState
        struct State {
          var count = 0
        }
        enum Action {
          case incrementButtonTapped
        }
        var body: some ReducerOf<Self> {
          Reduce { state, action in .none }
        }
      }
      """
    } expansion: {
      """
      struct Counter {
        @ObservableState
        struct State {
          var count = 0
        }
        @CasePathable
        enum Action {
          case incrementButtonTapped
        }
        @Composable.ReducerBuilder<Self.State, Self.Action>
        var body: some ReducerOf<Self> {
          Reduce { state, action in .none }
        }
      }

      extension Counter: Composable.Reducer {
      }
      """
    }
  }

  @Test func reduceIntoActionNeedsNoBuilder() {
    assertMacro {
      """
      @Reducer
      public struct Counter {
        public struct State {}
        @CasePathable
        public enum Action {
          case tapped
        }
        public func reduce(into state: inout State, action: Action) -> Effect<Action> {
          .none
        }
      }
      """
    } expansion: {
      """
      public struct Counter {
        public struct State {}
        @CasePathable
        public enum Action {
          case tapped
        }
        public func reduce(into state: inout State, action: Action) -> Effect<Action> {
          .none
        }
      }

      extension Counter: Composable.Reducer {
      }
      """
    }
  }

  @Test func aFeatureStillBeingWrittenGetsWhatItLacks() {
    assertMacro {
      """
      @Reducer
      struct ParentFeature {
        struct State {
          var count = 0
        }
      }
      """
    } expansion: {
      """
      struct ParentFeature {
        struct State {
          var count = 0
        }

        enum Action: Equatable, Hashable, Sendable {
        }

        var body: Composable.EmptyReducer<State, Action> {
          Composable.EmptyReducer()
        }
      }

      extension ParentFeature: Composable.Reducer {
      }
      """
    }
  }

  @Test func anEnumOfReducersBecomesDestinations() {
    assertMacro {
      """
      @Reducer
      enum Destination {
        case detail(DetailFeature)
        case edit(Forms.EditFeature)
        case alert(AlertState<Alert>)

        enum Alert {
          case confirmDeletion
        }
      }
      """
    } expansion: {
      #"""
      enum Destination {
        case detail(DetailFeature)
        case edit(Forms.EditFeature)
        case alert(AlertState<Alert>)

        enum Alert {
          case confirmDeletion
        }

        @CasePathable
        @dynamicMemberLookup
        @ObservableState
        enum State: Composable.CaseReducerState {
          typealias StateReducer = Destination
          case detail(DetailFeature.State)
          case edit(Forms.EditFeature.State)
          case alert(AlertState<Alert>)
        }

        @CasePathable
        enum Action {
          case detail(DetailFeature.Action)
          case edit(Forms.EditFeature.Action)
          case alert(Alert)
        }

        @Composable.ReducerBuilder<Self.State, Self.Action>
        static var body: some Composable.Reducer<Self.State, Self.Action> {
          Composable.Scope(state: \Self.State.Cases.detail, action: \Self.Action.Cases.detail) {
            DetailFeature()
          }
          Composable.Scope(state: \Self.State.Cases.edit, action: \Self.Action.Cases.edit) {
            Forms.EditFeature()
          }
        }

        enum CaseScope {
          case detail(Composable.StoreOf<DetailFeature>)
          case edit(Composable.StoreOf<Forms.EditFeature>)
          case alert(AlertState<Alert>)
        }

        @MainActor
        static func scope(_ store: Composable.Store<Self.State, Self.Action>) -> CaseScope {
          switch store.state {
          case .detail:
            return .detail(store.scope(state: \State.detail, action: \Action.Cases.detail)!)
          case .edit:
            return .edit(store.scope(state: \State.edit, action: \Action.Cases.edit)!)
          case let .alert(state):
            return .alert(state)
          }
        }
      }

      extension Destination: Composable.CaseReducer, Composable.Reducer {
      }
      """#
    }
  }

  @Test func bodyAndReduceTogetherAreAnError() {
    assertMacro {
      """
      @Reducer
      struct Feature {
        struct State {}
        enum Action {
          case tapped
        }
        var body: some ReducerOf<Self> {
          EmptyReducer()
        }
        func reduce(into state: inout State, action: Action) -> Effect<Action> {
          .none
        }
      }
      """
    } diagnostics: {
      """
      @Reducer
      struct Feature {
        struct State {}
        enum Action {
          case tapped
        }
        var body: some ReducerOf<Self> {
          EmptyReducer()
        }
        func reduce(into state: inout State, action: Action) -> Effect<Action> {
             ┬─────
             ╰─ 🛑 A 'reduce' method should not be defined in a reducer with a 'body'; it takes precedence and 'body' will never be invoked
          .none
        }
      }
      """
    }
  }

  @Test func actionsWithoutLogicAreAnError() {
    assertMacro {
      """
      @Reducer
      struct Feature {
        struct State {}
        enum Action {
          case tapped
        }
      }
      """
    } diagnostics: {
      """
      @Reducer
      struct Feature {
                     ┬
                     ╰─ 🛑 '@Reducer' feature has actions but no logic: implement 'var body: some ReducerOf<Self>' or 'reduce(into:action:)'
        struct State {}
        enum Action {
          case tapped
        }
      }
      """
    }
  }

  @Test func aClassIsNotAReducer() {
    assertMacro {
      """
      @Reducer
      final class Feature {
      }
      """
    } diagnostics: {
      """
      @Reducer
      ┬───────
      ╰─ 🛑 '@Reducer' applies to a struct (a feature) or an enum (its destinations)
      final class Feature {
      }
      """
    }
  }
}
