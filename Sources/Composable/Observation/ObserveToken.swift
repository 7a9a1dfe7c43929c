internal import Observation

/// Runs `apply` now, and again each time something it read changes: the way SwiftUI re-renders
/// a view that reads a store, for a terminal UI or any other view without SwiftUI.
///
/// What `apply` reads is tracked with Swift's Observation: properties of ``ObservableState()``
/// state read through a ``Store``, and `@Shared` values, including changes that arrive from
/// another process. A change schedules one re-run on the main actor, however many changes come
/// before it runs; each run tracks afresh what it reads.
///
/// ```swift
/// let token = observe {
///   print("count: \(store.count)")   // runs again only when count changes
/// }
/// ```
///
/// - Parameter apply: Reads state and renders it.
/// - Returns: A token; keep it for as long as `apply` should run. Releasing or cancelling it
///   stops the re-runs.
@MainActor
public func observe(_ apply: @escaping @MainActor () -> Void) -> ObserveToken {
  let token = ObserveToken(apply)
  token.run()
  return token
}

/// A running ``observe(_:)``; it stops on ``cancel()`` or when released.
@MainActor
public final class ObserveToken {
  private var apply: (@MainActor () -> Void)?

  init(_ apply: @escaping @MainActor () -> Void) {
    self.apply = apply
  }

  /// Whether ``cancel()`` was called.
  public var isCancelled: Bool { apply == nil }

  /// Stops re-running.
  public func cancel() {
    apply = nil
  }

  func run() {
    guard let apply else { return }
    withObservationTracking(apply) { [weak self] in
      Task { @MainActor in self?.run() }
    }
  }
}
