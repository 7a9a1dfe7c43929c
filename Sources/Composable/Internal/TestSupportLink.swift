#if os(Linux)
  import Glibc
  internal import IssueReporting

  /// On Linux, IssueReporting reaches Swift Testing and XCTest only through the
  /// IssueReportingTestSupport library. A test process that does not link it prints each failure
  /// and lets the test pass, so a ``TestStore`` there ends the run instead of asserting nothing.
  enum TestSupportLink {
    /// The function IssueReporting calls to record an issue.
    private static let recordSymbol = "$s25IssueReportingTestSupport07_recordA0ypyF"

    /// Whether the process links the library. Only what the process was linked with counts:
    /// IssueReporting would also load a copy that merely lies next to the test binary, which
    /// works on one machine and not on the next.
    private static let isLinked = dlsym(dlopen(nil, RTLD_LAZY), recordSymbol) != nil

    /// Ends a test process that cannot report failures, saying what to add.
    static func check() {
      guard isTesting, !isLinked else { return }
      let message = """
        error: TestStore cannot report failures in this test process: it does not link \
        IssueReportingTestSupport, so every assertion would pass.
        Add this product to the test target's dependencies (see SharedMirror's README, "Use it \
        in your package"), with the name of the folder SharedMirror is checked out in as `package`:
            .product(name: "ComposableTestSupport", package: "SharedMirror")

        """
      _ = message.withCString { write(STDERR_FILENO, $0, strlen($0)) }
      exit(EXIT_FAILURE)
    }
  }
#endif
