internal import ConcurrencyExtras
public import Dependencies
internal import IssueReporting

/// Dismisses the presented feature whose effect calls it, from inside that effect.
///
/// ```swift
/// @Dependency(\.dismiss) var dismiss
/// case .saveButtonTapped:
///   return .run { _ in await dismiss() }
/// ```
///
/// It sends `.dismiss` to the parent's ``PresentationAction`` case (or `.popFrom(id:)` to its
/// ``StackAction`` case), which removes the child and cancels its effects, so nothing after the
/// call runs.
public struct DismissEffect: Sendable {
  /// How the presented (or pushed) feature whose effect is running is dismissed. A task local
  /// rather than a value of the dependency, so that a `DismissEffect` captured when the reducer
  /// ran (`.run { [dismiss] _ in await dismiss() }`) works too, as in TCA.
  @TaskLocal static var ofRunningEffect: (@MainActor @Sendable () -> Void)?

  /// Dismisses the presented feature.
  public func callAsFunction(
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async {
    guard let dismiss = Self.ofRunningEffect else {
      reportIssue(
        """
        "dismiss" was called from an effect of a feature that is not presented with \
        "ifLet(\\.$destination, action: \\.destination)" nor pushed with \
        "forEach(\\.path, action: \\.path)". Nothing was dismissed.
        """,
        fileID: fileID, filePath: filePath, line: line, column: column
      )
      return
    }
    await dismiss()
  }
}

extension DependencyValues {
  /// Dismisses the presented feature whose effect calls it; see ``DismissEffect``.
  public var dismiss: DismissEffect {
    get { self[DismissEffectKey.self] }
    set { self[DismissEffectKey.self] = newValue }
  }
}

private enum DismissEffectKey: DependencyKey {
  static let liveValue = DismissEffect()
  static let testValue = DismissEffect()
}

extension Effect {
  /// Lets the work of this effect dismiss its feature: `dismiss()` in it sends `dismissAction`.
  func dismissing(with dismissAction: Action) -> Self {
    Self(operation: operation.dismissing(with: UncheckedSendable(dismissAction)))
  }
}

extension Effect.Operation {
  fileprivate func dismissing(with action: UncheckedSendable<Action>) -> Self {
    switch self {
    case .none, .send, .publisher, .cancel:
      return self
    case .run(let priority, let operation):
      return .run(priority) { send in
        await DismissEffect.$ofRunningEffect.withValue({ send(action.value) }) {
          await operation(send)
        }
      }
    case .cancellable(let id, let cancelInFlight, let operation):
      return .cancellable(
        id: id, cancelInFlight: cancelInFlight, operation.dismissing(with: action))
    case .throttle(let id, let window, let operation):
      return .throttle(id: id, window: window, operation.dismissing(with: action))
    case .merge(let operations):
      return .merge(operations.map { $0.dismissing(with: action) })
    case .concatenate(let operations):
      return .concatenate(operations.map { $0.dismissing(with: action) })
    }
  }
}
