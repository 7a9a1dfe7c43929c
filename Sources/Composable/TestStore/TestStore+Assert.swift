extension TestStore {
  /// Asserts the store's current state, with no action: for a non-exhaustive store, what the
  /// test cares about now; for an exhaustive one, every change since the last assertion.
  ///
  /// ```swift
  /// store.exhaustivity = .off
  /// await store.send(.login)
  /// store.assert { $0.isLoggedIn = true }
  /// ```
  ///
  /// - Parameters:
  ///   - updateStateToExpectedResult: Mutates the last asserted state into the expected one.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public func assert(
    _ updateStateToExpectedResult: @escaping (inout State) throws -> Void,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) {
    assertState(
      from: state, to: root.state, action: "assert", updateStateToExpectedResult,
      at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
  }

  /// Runs `operation` with ``exhaustivity`` set to `exhaustivity`, then sets it back.
  ///
  /// ```swift
  /// await store.withExhaustivity(.off) {
  ///   await store.send(.refresh)
  ///   await store.receive(\.response) { $0.items = items }
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - exhaustivity: How strictly to check inside `operation`.
  ///   - operation: The sends and receives.
  /// - Returns: What `operation` returns.
  public func withExhaustivity<R>(
    _ exhaustivity: Exhaustivity, operation: () async throws -> R
  ) async rethrows -> R {
    let saved = self.exhaustivity
    self.exhaustivity = exhaustivity
    defer { self.exhaustivity = saved }
    return try await operation()
  }
}
