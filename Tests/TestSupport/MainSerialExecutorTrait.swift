import ConcurrencyExtras
public import Testing
import Synchronization

/// Runs a test (or every test of a suite) with all tasks serialised on the main executor, so an
/// effect started by `send` reliably reaches its clock sleep before the test advances the clock.
///
/// The executor hook is process-wide and tests run in parallel, so it is reference-counted: it
/// stays on while any test that asked for it is running.
public struct MainSerialExecutorTrait: TestTrait, SuiteTrait, TestScoping {
  private static let users = Mutex(0)

  /// Applies to every test of a suite.
  public var isRecursive: Bool { true }

  /// Wraps the test.
  public func provideScope(
    for _: Test, testCase: Test.Case?, performing function: () async throws -> Void
  ) async throws {
    guard testCase != nil else { return try await function() }
    Self.users.withLock { users in
      users += 1
      uncheckedUseMainSerialExecutor = true
    }
    defer {
      Self.users.withLock { users in
        users -= 1
        if users == 0 { uncheckedUseMainSerialExecutor = false }
      }
    }
    try await function()
  }
}

extension Trait where Self == MainSerialExecutorTrait {
  /// Serialises every task on the main executor while the test runs.
  public static var mainSerialExecutor: Self { MainSerialExecutorTrait() }
}
