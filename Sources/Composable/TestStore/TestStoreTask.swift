internal import IssueReporting

/// The effects started by one
/// ``TestStore/send(_:assert:fileID:filePath:line:column:)-(Action,_,_,_,_,_)``.
public struct TestStoreTask: Hashable, Sendable {
  let handle: EffectHandle?
  let location: SourceLocation

  /// Cancels the effects, e.g. a long-living subscription at the end of a test.
  @MainActor
  public func cancel() async {
    handle?.cancel()
    await Task.megaYield()
  }

  /// Waits for the effects to finish; fails if they are still running after `timeout`.
  ///
  /// - Parameters:
  ///   - timeout: The longest wait, a safety net against a hung test.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  @MainActor
  public func finish(
    timeout: Duration = .seconds(1),
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async {
    guard let handle else { return }
    let signal = ChangeSignal()
    handle.onFinish { signal.fire() }
    let deadline = ContinuousClock.now + timeout
    while !handle.isFinished, ContinuousClock.now < deadline {
      await signal.wait(until: deadline)
    }
    if !handle.isFinished {
      reportIssue(
        "Expected the effects of this action to finish, but they are still running.",
        fileID: fileID, filePath: filePath, line: line, column: column
      )
    }
  }

  /// Whether the effects were cancelled.
  @MainActor
  public var isCancelled: Bool { handle?.isCancelled ?? false }

  /// Two tasks are equal when they track the same effects.
  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.handle.map(ObjectIdentifier.init) == rhs.handle.map(ObjectIdentifier.init)
  }

  /// Hashes the identity of the tracked effects.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(handle.map(ObjectIdentifier.init))
  }
}
