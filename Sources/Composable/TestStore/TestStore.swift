public import CasePaths
internal import ConcurrencyExtras
internal import CustomDump
public import Dependencies
internal import IssueReporting
internal import Sharing

/// A store for tests that makes you assert every state change, every action effects send back,
/// and the end of every effect.
///
/// ```swift
/// @Test func increment() async {
///   let store = TestStore(initialState: Counter.State()) { Counter() }
///   await store.send(.incrementButtonTapped) { $0.count = 1 }
///   await store.send(.factButtonTapped)
///   await store.receive(\.factResponse) { $0.fact = "1 is a number" }
/// }
/// ```
///
/// Failures go through IssueReporting's `reportIssue`, so they surface in Swift Testing and
/// XCTest alike, with a diff of expected and actual state. `@Shared` mutations are asserted like
/// any other state change.
@MainActor
public final class TestStore<State: Equatable, Action> {
  /// How strictly the store checks.
  public var exhaustivity: Exhaustivity = .on
  /// The longest time
  /// ``receive(_:timeout:assert:fileID:filePath:line:column:)-((Action)->Bool,_,_,_,_,_,_)``
  /// and ``finish(timeout:fileID:filePath:line:column:)`` wait before failing; a safety net
  /// against a hung test, not a way to wait for work.
  public var timeout: Duration = .seconds(1)
  /// The state as last asserted.
  public private(set) var state: State
  /// The dependencies the reducer and its effects use. Changing them affects the actions sent
  /// afterwards: `store.dependencies.date.now = later`.
  public var dependencies: DependencyValues {
    get { root.dependencies }
    set { root.dependencies = newValue }
  }

  private let recorder: Recorder<State, Action>
  let root: RootStore<State, Action>
  /// The effects each sent action started, to say which are still running at the end.
  private var started: [(handle: EffectHandle, action: String, location: SourceLocation)] = []
  private let tracker = SharedChangeTracker()
  private let location: SourceLocation
  private let changeSignal = ChangeSignal()

  /// Creates a test store.
  ///
  /// - Parameters:
  ///   - initialState: The state to start from.
  ///   - reducer: The reducer under test.
  ///   - prepareDependencies: Overrides dependencies (clocks, clients) for this test.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public init<R: Reducer>(
    initialState: @autoclosure () -> State,
    @ReducerBuilder<State, Action> reducer: () -> R,
    withDependencies prepareDependencies: (inout DependencyValues) -> Void = { _ in },
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) where R.State == State, R.Action == Action {
    #if os(Linux)
      TestSupportLink.check()
    #endif
    // Through `withDependencies`, so that overriding a dependency that has no test value
    // (`$0.numberFact.fetch = …`) is not reported as using it. Stack element ids count from 0
    // in each store.
    let dependencies = withDependencies {
      $0.stackElementID = StackElementIDGenerator()
      prepareDependencies(&$0)
    } operation: {
      DependencyValues._current
    }
    let (initialState, reducer) = DependencyValues.$_current.withValue(dependencies) {
      (initialState(), reducer())
    }
    let recorder = Recorder<State, Action>()
    self.recorder = recorder
    self.state = initialState
    self.location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    root = RootStore(
      initialState: initialState,
      reduce: { state, action in
        let effect = reducer.reduce(into: &state, action: action)
        recorder.record(action, state: state)
        return effect
      },
      dependencies: dependencies,
      sharedChangeTracker: tracker
    )
    let signal = changeSignal
    recorder.onReceive = { signal.fire() }
    root.runner.onEffectFinished = { signal.fire() }
  }

  // Not an isolated deinit: those run without task-local values, and the failures reported
  // here must reach the running test through them.
  deinit {
    guard MainQueue.isCurrent else { return }
    MainActor.assumeIsolated {
      checkCompleted(at: location)
      root.runner.cancelAll()
    }
  }

  // MARK: - Sending

  /// Sends an action and asserts how the state changed.
  ///
  /// - Parameters:
  ///   - action: The action.
  ///   - updateStateToExpectedResult: Mutates the previous state into the expected one; omit it
  ///     when the action changes nothing.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A task for the effects the action started.
  @discardableResult
  public func send(
    _ action: Action,
    assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async -> TestStoreTask {
    let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    if !recorder.received.isEmpty {
      if exhaustivity == .on {
        fail(
          """
          Must handle \(recorder.received.count) received \
          action\(recorder.received.count == 1 ? "" : "s") before sending an action: …

          Unhandled actions:
          \(recorder.received.map { "  • " + String(customDumping: $0.action) }.joined(separator: "\n"))
          """,
          at: here
        )
      }
      recorder.received.removeAll()
    }
    recorder.expectUserAction()
    let handle = root.send(action)
    let actual = recorder.takeUserActionState() ?? root.state
    let description = String(customDumping: action)
    started.removeAll { $0.handle.isFinished }
    if let handle { started.append((handle, description, here)) }
    assertState(
      from: state, to: actual, action: description, updateStateToExpectedResult, at: here
    )
    await Task.megaYield()
    return TestStoreTask(handle: handle, location: here)
  }

  /// Sends the action of a case without a value, by case key path:
  /// `await store.send(\.destination.form.task)`.
  ///
  /// - Parameters:
  ///   - actionCase: The case to send.
  ///   - updateStateToExpectedResult: Mutates the previous state into the expected one.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A task for the effects started by the action.
  @discardableResult
  public func send(
    _ actionCase: CaseKeyPath<Action, Void>,
    assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async -> TestStoreTask where Action: CasePathable {
    await send(
      actionCase(), assert: updateStateToExpectedResult,
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }

  /// Sends the action of a case carrying `value`, by case key path:
  /// `await store.send(\.destination.form.nameChanged, "Milk")`.
  ///
  /// - Parameters:
  ///   - actionCase: The case to send.
  ///   - value: Its associated value.
  ///   - updateStateToExpectedResult: Mutates the previous state into the expected one.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: A task for the effects started by the action.
  @discardableResult
  public func send<Value>(
    _ actionCase: CaseKeyPath<Action, Value>,
    _ value: Value,
    assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async -> TestStoreTask where Action: CasePathable {
    await send(
      actionCase(value), assert: updateStateToExpectedResult,
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }

  // MARK: - Receiving

  /// Asserts that an effect sent an action matching `isMatching`, and how it changed the state.
  ///
  /// - Parameters:
  ///   - isMatching: Recognises the expected action.
  ///   - timeout: Overrides ``timeout``.
  ///   - updateStateToExpectedResult: Mutates the previous state into the expected one.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public func receive(
    _ isMatching: (Action) -> Bool,
    timeout: Duration? = nil,
    assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async {
    let here = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    await waitUntil(timeout: timeout ?? self.timeout) {
      recorder.received.contains { isMatching($0.action) } || root.runner.inFlight.isEmpty
    }
    guard let index = recorder.received.firstIndex(where: { isMatching($0.action) }) else {
      fail(
        recorder.received.isEmpty
          ? "Expected to receive an action, but received none"
            + (root.runner.inFlight.isEmpty ? "." : " in time (effects are still running).")
          : """
          Expected to receive a matching action, but received:
          \(recorder.received.map { "  • " + String(customDumping: $0.action) }.joined(separator: "\n"))
          """,
        at: here
      )
      return
    }
    if index > 0, exhaustivity == .on {
      fail(
        """
        Received unexpected action\(index == 1 ? "" : "s") before the expected one:
        \(recorder.received[..<index].map { "  • " + String(customDumping: $0.action) }.joined(separator: "\n"))
        """,
        at: here
      )
    }
    let (action, actual) = recorder.received[index]
    recorder.received.removeFirst(index + 1)
    assertState(
      from: state, to: actual, action: String(customDumping: action),
      updateStateToExpectedResult, at: here
    )
    await Task.megaYield()
  }

  /// Asserts that an effect sent exactly `expected`.
  ///
  /// - Parameters:
  ///   - expected: The action.
  ///   - timeout: Overrides ``timeout``.
  ///   - updateStateToExpectedResult: Mutates the previous state into the expected one.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public func receive(
    _ expected: Action,
    timeout: Duration? = nil,
    assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async where Action: Equatable {
    await receive(
      { $0 == expected }, timeout: timeout, assert: updateStateToExpectedResult,
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }

  /// Asserts that an effect sent an action of the case `actionCase`: `await store.receive(\.y)`.
  ///
  /// - Parameters:
  ///   - actionCase: The expected case.
  ///   - timeout: Overrides ``timeout``.
  ///   - updateStateToExpectedResult: Mutates the previous state into the expected one.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public func receive<Value>(
    _ actionCase: CaseKeyPath<Action, Value>,
    timeout: Duration? = nil,
    assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async where Action: CasePathable {
    await receive(
      { $0[case: actionCase] != nil }, timeout: timeout, assert: updateStateToExpectedResult,
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }

  /// Asserts that an effect sent `actionCase` carrying `value`: `receive(\.response, 42)`.
  ///
  /// - Parameters:
  ///   - actionCase: The expected case.
  ///   - value: The expected associated value.
  ///   - timeout: Overrides ``timeout``.
  ///   - updateStateToExpectedResult: Mutates the previous state into the expected one.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public func receive<Value: Equatable>(
    _ actionCase: CaseKeyPath<Action, Value>,
    _ value: Value,
    timeout: Duration? = nil,
    assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async where Action: CasePathable {
    await receive(
      { $0[case: actionCase] == value }, timeout: timeout, assert: updateStateToExpectedResult,
      fileID: fileID, filePath: filePath, line: line, column: column
    )
  }

  // MARK: - Finishing

  /// Waits for every effect to finish and fails if some are still running after the timeout.
  ///
  /// - Parameters:
  ///   - timeout: Overrides ``timeout``.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public func finish(
    timeout: Duration? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async {
    await waitUntil(timeout: timeout ?? self.timeout) { root.runner.inFlight.isEmpty }
    checkCompleted(
      at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
    )
  }

  /// Drops the actions received so far without asserting them.
  ///
  /// - Parameters:
  ///   - strict: Fails when there was nothing to skip.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  public func skipReceivedActions(
    strict: Bool = true,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) async {
    await Task.megaYield()
    if strict, recorder.received.isEmpty {
      fail(
        "There were no received actions to skip.",
        at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
      )
    }
    if let last = recorder.received.last {
      state = last.state
      tracker.resetSnapshots()
    }
    recorder.received.removeAll()
  }

  /// Cancels every running effect, for tests that don't care how they end.
  public func skipInFlightEffects() async {
    root.runner.cancelAll()
    await Task.megaYield()
  }

  // MARK: - Assertions

  func assertState(
    from previous: State,
    to actual: State,
    action: String,
    _ updateStateToExpectedResult: ((inout State) throws -> Void)?,
    at location: SourceLocation
  ) {
    defer {
      state = actual
      tracker.resetSnapshots()
    }
    if case .off(showSkippedAssertions: true) = exhaustivity {
      showSkipped(
        from: previous, to: actual, action: action, updateStateToExpectedResult, at: location
      )
    }
    var expected = exhaustivity == .on ? previous : actual
    if exhaustivity != .on { tracker.resetSnapshots() }
    do {
      try tracker.asserting { try updateStateToExpectedResult?(&expected) }
    } catch {
      fail("Threw error while updating expected state: \(error)", at: location)
      return
    }
    guard !tracker.asserting({ expected == actual }) else { return }
    let expectedDump = tracker.asserting { String(customDumping: expected) }
    let actualDump = String(customDumping: actual)
    let difference = LineDiff(expected: expectedDump, actual: actualDump).description
    fail(
      updateStateToExpectedResult == nil
        ? """
        State was not expected to change, but a change occurred after \(action): …

        \(difference)

        (Expected: −, Actual: +)
        """
        : """
        A state change does not match expectation after \(action): …

        \(difference)

        (Expected: −, Actual: +)
        """,
      at: location
    )
  }

  /// What an exhaustive store would have asserted on a state change, shown as an expected
  /// issue (`.off(showSkippedAssertions: true)`).
  private func showSkipped(
    from previous: State,
    to actual: State,
    action: String,
    _ updateStateToExpectedResult: ((inout State) throws -> Void)?,
    at location: SourceLocation
  ) {
    var expected = previous
    do {
      try tracker.asserting { try updateStateToExpectedResult?(&expected) }
    } catch {
      return
    }
    guard !tracker.asserting({ expected == actual }) else { return }
    let expectedDump = tracker.asserting { String(customDumping: expected) }
    let difference = LineDiff(expected: expectedDump, actual: String(customDumping: actual))
    withExpectedIssue {
      fail("Skipped assertions after \(action): …\n\n\(difference)", at: location)
    }
  }

  private func checkCompleted(at location: SourceLocation) {
    guard exhaustivity == .on else { return }
    if !recorder.received.isEmpty {
      fail(
        """
        The store received \(recorder.received.count) unexpected \
        action\(recorder.received.count == 1 ? "" : "s"): …

        \(recorder.received.map { "  • " + String(customDumping: $0.action) }.joined(separator: "\n"))

        To fix, assert them with "receive", or skip them with "skipReceivedActions".
        """,
        at: location
      )
    }
    let running = root.runner.inFlight.count
    guard running > 0 else { return }
    // Reported at each send whose effects still run, as TCA does; the rest at the store.
    let advice = """
      Every effect must finish before the end of the test. Make sure a test clock was advanced \
      far enough, cancel long-living effects, or call "skipInFlightEffects".
      """
    let unfinished = started.filter { !$0.handle.isFinished }
    for send in unfinished {
      fail("An effect returned for \(send.action) is still running. \(advice)", at: send.location)
    }
    if unfinished.isEmpty {
      fail(
        "\(running) effect\(running == 1 ? " is" : "s are") still running. \(advice)",
        at: location
      )
    }
  }

  private func fail(_ message: String, at location: SourceLocation) {
    reportIssue(
      message,
      fileID: location.fileID, filePath: location.filePath,
      line: location.line, column: location.column
    )
  }

  /// Suspends until `condition` holds, re-checking whenever an action is received or an effect
  /// finishes; gives up after `timeout` so a broken test fails instead of hanging.
  private func waitUntil(timeout: Duration, _ condition: () -> Bool) async {
    await Task.megaYield()
    let deadline = ContinuousClock.now + timeout
    while !condition(), ContinuousClock.now < deadline {
      await changeSignal.wait(until: deadline)
    }
  }
}

/// A convenience for naming a test store by its feature's reducer.
public typealias TestStoreOf<R: Reducer> = TestStore<R.State, R.Action>
where R.State: Equatable

/// How strictly a ``TestStore`` checks.
public enum Exhaustivity: Equatable, Sendable {
  /// Every state change, received action and effect must be asserted.
  case on
  /// Only what a test asserts is checked; the rest is allowed to happen. With
  /// `showSkippedAssertions`, the state changes an exhaustive store would have asserted are
  /// shown as expected issues.
  case off(showSkippedAssertions: Bool)

  /// Only what a test asserts is checked, silently.
  public static let off = Self.off(showSkippedAssertions: false)
}
