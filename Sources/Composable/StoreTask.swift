/// The effects started by one ``Store/send(_:)``: await them or cancel them.
///
/// ```swift
/// await store.send(.refresh).finish()
/// ```
public struct StoreTask: Hashable, Sendable {
  let handle: EffectHandle?

  init(handle: EffectHandle?) {
    self.handle = handle
  }

  /// Cancels the effects.
  @MainActor
  public func cancel() {
    handle?.cancel()
  }

  /// Suspends until every effect has finished (or was cancelled).
  @MainActor
  public func finish() async {
    await handle?.wait()
  }

  /// Whether the effects were cancelled.
  @MainActor
  public var isCancelled: Bool {
    handle?.isCancelled ?? false
  }

  /// Whether no effect is running any more.
  @MainActor
  public var isFinished: Bool {
    handle?.isFinished ?? true
  }

  /// Two tasks are equal when they track the same effects.
  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.handle.map(ObjectIdentifier.init) == rhs.handle.map(ObjectIdentifier.init)
  }

  /// Hashes the identity of the tracked effects.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(handle.map(ObjectIdentifier.init))
  }
}
