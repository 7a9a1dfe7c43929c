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
  /// Counts the runs: a re-run asked for by an older one is not needed once a newer ran.
  private var runs = 0

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
    runs += 1
    let run = runs
    var reads: SharedReads?
    withObservationTracking({ reads = SharedReads.recording { apply() } }) { [weak self] in
      Task { @MainActor in self?.rerun(after: run) }
    }
    // Observation installs the tracking once `apply` returns: a shared value it read that
    // another thread changed meanwhile told nobody, and the view would stay on what it read.
    if reads?.changedSinceRead == true {
      Task { @MainActor [weak self] in self?.rerun(after: run) }
    }
  }

  private func rerun(after run: Int) {
    guard run == runs else { return }
    self.run()
  }
}
