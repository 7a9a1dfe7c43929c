public import CasePaths

/// The actions of a navigation stack: an action of one of its screens, a pop, or a push.
///
/// ```swift
/// enum Action {
///   case path(StackActionOf<Path>)
/// }
/// store.send(.path(.element(id: 0, action: .detail(.saveButtonTapped))))
/// await testStore.send(\.path[id: 0].detail.saveButtonTapped)   // the same, by case path
/// ```
public enum StackAction<State, Action> {
  /// An action of the element with id `id`.
  indirect case element(id: StackElementID, action: Action)
  /// Removes the element with id `id` and every element above it (a back button).
  case popFrom(id: StackElementID)
  /// Adds `state` on top under `id`.
  case push(id: StackElementID, state: State)
}

/// The ``StackAction`` of a stack whose screens are the reducer `R` (usually a `@Reducer enum`).
public typealias StackActionOf<R: Reducer> = StackAction<R.State, R.Action>

extension StackAction: CasePathable {
  /// The case paths of ``StackAction``, and the actions of one element by id.
  public struct AllCasePaths: Sendable {
    /// `.element(id:action:)`.
    public var element: AnyCasePath<StackAction, (id: StackElementID, action: Action)> {
      AnyCasePath(
        embed: { .element(id: $0.id, action: $0.action) },
        extract: {
          guard case .element(let id, let action) = $0 else { return nil }
          return (id, action)
        }
      )
    }

    /// `.popFrom(id:)`.
    public var popFrom: AnyCasePath<StackAction, StackElementID> {
      AnyCasePath(
        embed: { .popFrom(id: $0) },
        extract: {
          guard case .popFrom(let id) = $0 else { return nil }
          return id
        }
      )
    }

    /// `.push(id:state:)`.
    public var push: AnyCasePath<StackAction, (id: StackElementID, state: State)> {
      AnyCasePath(
        embed: { .push(id: $0.id, state: $0.state) },
        extract: {
          guard case .push(let id, let state) = $0 else { return nil }
          return (id, state)
        }
      )
    }

    /// The actions of the element with id `id`; through it, `\.path[id: 0].detail.save` is a
    /// case key path.
    public subscript(id id: StackElementID) -> AnyCasePath<StackAction, Action> {
      .element(id: id, of: element)
    }
  }

  /// The case paths.
  public static var allCasePaths: AllCasePaths { AllCasePaths() }
}

extension StackAction: Equatable where State: Equatable, Action: Equatable {}
extension StackAction: Hashable where State: Hashable, Action: Hashable {}
extension StackAction: Sendable where State: Sendable, Action: Sendable {}
