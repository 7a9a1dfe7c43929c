internal import ConcurrencyExtras

extension Effect {
  /// Makes this effect cancellable by an identifier.
  ///
  /// Cancel it later with ``cancel(id:)``. Identifiers are scoped to one store tree, so tests
  /// running in parallel never cancel each other's effects.
  ///
  /// ```swift
  /// return .run { send in ... }
  ///   .cancellable(id: CancelID.search, cancelInFlight: true)
  /// ```
  ///
  /// - Parameters:
  ///   - id: The identifier.
  ///   - cancelInFlight: Cancels any running effect with the same identifier before starting this
  ///     one (the basis of debouncing and "latest request wins").
  /// - Returns: A cancellable effect.
  public func cancellable(id: some Hashable & Sendable, cancelInFlight: Bool = false) -> Self {
    guard !operation.isNone else { return self }
    return Self(
      operation: .cancellable(
        id: AnyHashableSendable(id), cancelInFlight: cancelInFlight, operation
      )
    )
  }

  /// An effect that cancels every running effect marked with `id`, synchronously.
  ///
  /// - Parameter id: The identifier passed to ``cancellable(id:cancelInFlight:)``.
  /// - Returns: An effect.
  public static func cancel(id: some Hashable & Sendable) -> Self {
    Self(operation: .cancel(AnyHashableSendable(id)))
  }

  /// Debounces this effect: it runs only after `duration` passes without another one with the
  /// same `id` starting.
  ///
  /// Built the TCA way from a clock sleep and ``cancellable(id:cancelInFlight:)``; pass a
  /// `TestClock` in tests to control time.
  ///
  /// - Parameters:
  ///   - id: The identifier shared by the debounced effects.
  ///   - duration: The quiet period.
  ///   - clock: The clock to sleep on.
  /// - Returns: A debounced effect.
  public func debounce<C: Clock>(
    id: some Hashable & Sendable, for duration: C.Duration, clock: C
  ) -> Self where C.Duration: Sendable {
    let clock = UncheckedSendable(clock)
    return Self.concatenate(
      .run { _ in try await clock.value.sleep(for: duration) },
      self
    )
    .cancellable(id: id, cancelInFlight: true)
  }

  /// Throttles this effect: while one with the same `id` is inside its `duration` window, later
  /// ones are dropped.
  ///
  /// - Parameters:
  ///   - id: The identifier shared by the throttled effects.
  ///   - duration: The window.
  ///   - clock: The clock to sleep on.
  /// - Returns: A throttled effect.
  public func throttle<C: Clock>(
    id: some Hashable & Sendable, for duration: C.Duration, clock: C
  ) -> Self where C.Duration: Sendable {
    let clock = UncheckedSendable(clock)
    return Self(
      operation: .throttle(
        id: AnyHashableSendable(id),
        window: Effect<Action>.run { _ in try await clock.value.sleep(for: duration) }.operation,
        operation
      )
    )
  }
}
