public import CasePaths

/// The actions of a presented child feature: its own, or a request to dismiss it.
///
/// ```swift
/// enum Action { case destination(PresentationAction<Destination.Action>) }
/// store.send(.destination(.presented(.detail(.saveButtonTapped))))
/// store.send(.destination(.dismiss))
/// ```
///
/// Case key paths reach through `presented`: `\.destination.detail` is
/// `\.destination.presented.detail`.
public enum PresentationAction<Action> {
  /// Dismisses the child: the parent runs first, then the child state becomes `nil` and its
  /// effects are cancelled.
  case dismiss
  /// An action of the presented child.
  indirect case presented(Action)
}

extension PresentationAction: Equatable where Action: Equatable {}
extension PresentationAction: Hashable where Action: Hashable {}
extension PresentationAction: Sendable where Action: Sendable {}

extension PresentationAction: CasePathable {
  /// The case paths of ``PresentationAction``, with the child's reached through `presented`.
  @dynamicMemberLookup
  public struct AllCasePaths: Sendable {
    /// `.dismiss`.
    public var dismiss: AnyCasePath<PresentationAction, Void> {
      AnyCasePath(
        embed: { .dismiss },
        extract: {
          guard case .dismiss = $0 else { return nil }
          return ()
        }
      )
    }

    /// `.presented(action)`.
    public var presented: AnyCasePath<PresentationAction, Action> {
      AnyCasePath(
        embed: { .presented($0) },
        extract: {
          guard case .presented(let action) = $0 else { return nil }
          return action
        }
      )
    }

    /// A case of the child's actions, through `presented`.
    public subscript<ChildAction>(
      dynamicMember keyPath: KeyPath<Action.AllCasePaths, AnyCasePath<Action, ChildAction>>
    ) -> AnyCasePath<PresentationAction, ChildAction> where Action: CasePathable {
      presented[dynamicMember: keyPath]
    }
  }

  /// The case paths.
  public static var allCasePaths: AllCasePaths { AllCasePaths() }
}
