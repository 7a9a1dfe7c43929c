import ComposableMacros
import MacroTesting
import Testing

@Suite(.macros(["Presents": PresentsMacro.self]))
struct PresentsMacroTests {
  @Test func anOptionalChildGetsStorageAndAProjection() {
    assertMacro {
      """
      @ObservableState
      struct State {
        @Presents public var destination: Destination.State?
      }
      """
    } expansion: {
      #"""
      @ObservableState
      struct State {
        public var destination: Destination.State? {
          @storageRestrictions(initializes: _destination)
          init(initialValue) {
            _destination = Composable.PresentationState(wrappedValue: initialValue)
          }
          get {
            _$observationRegistrar.access(self, keyPath: \.destination)
            return _destination.wrappedValue
          }
          set {
            _$observationRegistrar.mutate(self, keyPath: \.destination, &_destination.wrappedValue, newValue, _$isIdentityEqual, _$shouldNotifyObservers)
          }
        }

        public var $destination: Composable.PresentationState<Destination.State> {
          get {
            _$observationRegistrar.access(self, keyPath: \.destination)
            return _destination
          }
          set {
            _$observationRegistrar.mutate(self, keyPath: \.destination, &_destination, newValue, _$isIdentityEqual, _$shouldNotifyObservers)
          }
        }

        @ObservationStateIgnored private var _destination = Composable.PresentationState<Destination.State>(wrappedValue: nil)
      }
      """#
    }
  }

  @Test func theTypeMustBeAnOptionalWrittenOut() {
    assertMacro {
      """
      @ObservableState
      struct State {
        @Presents var destination = Destination.State.alert
      }
      """
    } diagnostics: {
      """
      @ObservableState
      struct State {
        @Presents var destination = Destination.State.alert
        ┬──────────────────────────────────────────────────
        ╰─ 🛑 '@Presents' needs an optional type written out: 'var destination: Child.State?'
      }
      """
    }
  }

  @Test func stateThatIsNotObservableIsToldWhatToWriteInstead() {
    assertMacro {
      """
      struct State {
        @Presents var destination: Destination.State?
      }
      """
    } diagnostics: {
      """
      struct State {
        @Presents var destination: Destination.State?
        ┬────────
        ╰─ 🛑 '@Presents' belongs in '@ObservableState' state; elsewhere, write '@PresentationState var destination'
      }
      """
    }
  }
}
