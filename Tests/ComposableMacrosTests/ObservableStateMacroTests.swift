import ComposableMacros
import MacroTesting
import Testing

@Suite(
  .macros([
    "ObservableState": ObservableStateMacro.self,
    "ObservationStateTracked": ObservationStateTrackedMacro.self,
    "ObservationStateIgnored": ObservationStateIgnoredMacro.self,
  ])
)
struct ObservableStateMacroTests {
  @Test func storedVarsAreTrackedAndTheRestLeftAlone() {
    assertMacro {
      """
      @ObservableState
      public struct State {
        public var count = 0
        var name: String
        let id: Int
        @Shared var stats: Stats
        @ObservationStateIgnored var scratch = 0
        var isEven: Bool { count.isMultiple(of: 2) }
        static var preview = State(name: "", id: 0, stats: Shared(Stats()))
      }
      """
    } expansion: {
      #"""
      public struct State {
        public var count {
          @storageRestrictions(initializes: _count)
          init(initialValue) {
            _count = initialValue
          }
          get {
            _$observationRegistrar.access(self, keyPath: \.count)
            return _count
          }
          set {
            _$observationRegistrar.mutate(self, keyPath: \.count, &_count, newValue, _$isIdentityEqual, _$shouldNotifyObservers)
          }
          _modify {
            let oldValue = _$observationRegistrar.willModify(self, keyPath: \.count, &_count)
            defer {
              _$observationRegistrar.didModify(self, keyPath: \.count, &_count, oldValue, _$isIdentityEqual, _$shouldNotifyObservers)
            }
            yield &_count
          }
        }

        private var _count = 0
        var name: String {
          @storageRestrictions(initializes: _name)
          init(initialValue) {
            _name = initialValue
          }
          get {
            _$observationRegistrar.access(self, keyPath: \.name)
            return _name
          }
          set {
            _$observationRegistrar.mutate(self, keyPath: \.name, &_name, newValue, _$isIdentityEqual, _$shouldNotifyObservers)
          }
          _modify {
            let oldValue = _$observationRegistrar.willModify(self, keyPath: \.name, &_name)
            defer {
              _$observationRegistrar.didModify(self, keyPath: \.name, &_name, oldValue, _$isIdentityEqual, _$shouldNotifyObservers)
            }
            yield &_name
          }
        }

        private var _name: String
        let id: Int
        @Shared var stats: Stats
        var scratch = 0
        var isEven: Bool { count.isMultiple(of: 2) }
        static var preview = State(name: "", id: 0, stats: Shared(Stats()))

        var _$observationRegistrar = Composable.ObservationStateRegistrar()

        public var _$id: Composable.ObservableStateID {
          _$observationRegistrar.id
        }

        public var customDumpMirror: Mirror {
          Mirror(self, children: ["count": _count as Any, "name": _name as Any, "id": id as Any, "stats": _stats as Any, "scratch": scratch as Any], displayStyle: .struct)
        }
      }

      extension State: Composable.ObservableState {
      }
      """#
    }
  }

  @Test func anEnumsIdentityFollowsItsCase() {
    assertMacro {
      """
      @ObservableState
      enum State {
        case detail(DetailFeature.State)
        case alert(AlertState<Alert>)
        case loading
      }
      """
    } expansion: {
      """
      enum State {
        case detail(DetailFeature.State)
        case alert(AlertState<Alert>)
        case loading

        var _$id: Composable.ObservableStateID {
          switch self {
          case let .detail(state):
            return ._$id(for: state)._$tag(0)
          case let .alert(state):
            return ._$id(for: state)._$tag(1)
          case .loading:
            return ._$inert._$tag(2)
          }
        }
      }

      extension State: Composable.ObservableState {
      }
      """
    }
  }

  @Test func aClassCannotBeObservableState() {
    assertMacro {
      """
      @ObservableState
      final class State {
        var count = 0
      }
      """
    } diagnostics: {
      """
      @ObservableState
      ┬───────────────
      ╰─ 🛑 '@ObservableState' cannot be applied to class type: state is a struct or an enum
      final class State {
        var count = 0
      }
      """
    }
  }

  @Test func presentationStateIsReplacedByPresents() {
    assertMacro {
      """
      @ObservableState
      struct State {
        @PresentationState var destination: Destination.State?
      }
      """
    } diagnostics: {
      """
      @ObservableState
      struct State {
        @PresentationState var destination: Destination.State?
        ┬─────────────────
        ╰─ 🛑 '@PresentationState' cannot be used in '@ObservableState'
           ✏️ Use '@Presents' instead
      }
      """
    } fixes: {
      """
      @ObservableState
      struct State {
        @Presents var destination: Destination.State?
      }
      """
    } expansion: {
      """
      struct State {
        @Presents var destination: Destination.State?

        var _$observationRegistrar = Composable.ObservationStateRegistrar()

        var _$id: Composable.ObservableStateID {
          _$observationRegistrar.id
        }

        var customDumpMirror: Mirror {
          Mirror(self, children: ["destination": _destination as Any], displayStyle: .struct)
        }
      }

      extension State: Composable.ObservableState {
      }
      """
    }
  }
}
