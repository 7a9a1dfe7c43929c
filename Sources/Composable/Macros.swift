/// Makes a struct a feature: conforms it to ``Reducer``, makes its `Action` enum
/// `@CasePathable` (and a `State` enum `@CasePathable` and `@dynamicMemberLookup`), and gives
/// `body` its ``ReducerBuilder``.
///
/// ```swift
/// @Reducer
/// struct Counter {
///   @ObservableState
///   struct State: Equatable { var count = 0 }
///   enum Action { case incrementButtonTapped }
///   var body: some ReducerOf<Self> {
///     Reduce { state, action in
///       state.count += 1
///       return .none
///     }
///   }
/// }
/// ```
///
/// On an enum whose cases each hold a reducer, it builds the destination pattern: `State` and
/// `Action` enums with one case per reducer, and a `body` that runs the reducer of the current
/// case. A case holding `AlertState<Alert>` has that alert as state and `Alert` as action.
/// `store.case` then tells which case a store of the enum is in, with a store for it.
///
/// ```swift
/// @Reducer
/// enum Destination {
///   case detail(DetailFeature)
///   case alert(AlertState<Alert>)
///   enum Alert { case confirmDeletion }
/// }
/// ```
@attached(
  member, names: named(State), named(Action), named(body), named(CaseScope), named(scope)
)
@attached(memberAttribute)
@attached(extension, conformances: Reducer, CaseReducer)
public macro Reducer() = #externalMacro(module: "ComposableMacros", type: "ReducerMacro")

/// Makes state observable property by property, with Swift's Observation: a view that read
/// `store.count` is told when `count` changes, and not when another property does.
///
/// Every stored `var` is tracked. `@Shared` and `@SharedReader` properties notify on their own
/// (a change from another process included); mark a property ``ObservationStateIgnored()`` to
/// leave it out. On an enum, a change of case is what observers hear about.
///
/// ```swift
/// @ObservableState
/// struct State {
///   var count = 0
///   @Shared(.broker("stats")) var stats = Stats()
/// }
/// ```
@attached(extension, conformances: ObservableState)
@attached(member, names: named(_$id), named(_$observationRegistrar), named(customDumpMirror))
@attached(memberAttribute)
public macro ObservableState() =
  #externalMacro(module: "ComposableMacros", type: "ObservableStateMacro")

/// Tracks one property of an ``ObservableState()`` type; the macro adds it, you do not.
@attached(accessor, names: named(init), named(get), named(set), named(_modify))
@attached(peer, names: prefixed(_))
public macro ObservationStateTracked() =
  #externalMacro(module: "ComposableMacros", type: "ObservationStateTrackedMacro")

/// Leaves a property of an ``ObservableState()`` type untracked: changing it tells no observer.
@attached(peer)
public macro ObservationStateIgnored() =
  #externalMacro(module: "ComposableMacros", type: "ObservationStateIgnoredMacro")

/// Holds a presented child feature's optional state in an ``ObservableState()`` type; `$name`
/// is its ``PresentationState``, for ``Reducer/ifLet(_:action:destination:fileID:filePath:line:column:)``.
///
/// ```swift
/// @Presents var destination: Destination.State?
/// // body: Reduce { … }.ifLet(\.$destination, action: \.destination)
/// ```
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(`$`), prefixed(_))
public macro Presents() = #externalMacro(module: "ComposableMacros", type: "PresentsMacro")

/// Lets a view send its feature's view actions without spelling `.view(…)`: conforms the type,
/// which holds a `store`, to ``ViewActionSending``.
///
/// ```swift
/// @ViewAction(for: Login.self)
/// struct LoginView {
///   let store: StoreOf<Login>
///   func logIn() { send(.loginButtonTapped) }   // store.send(.view(.loginButtonTapped))
/// }
/// ```
@attached(extension, conformances: ViewActionSending)
public macro ViewAction<R: Reducer>(for: R.Type) =
  #externalMacro(module: "ComposableMacros", type: "ViewActionMacro")
