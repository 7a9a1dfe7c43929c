internal import IssueReporting

/// Reports an error that escaped an ``Effect/run(priority:operation:catch:fileID:filePath:line:column:)``
/// with no `catch` handler, pointing at the line that built the effect.
func reportUnhandledEffectError(
  _ error: any Error,
  fileID: StaticString, filePath: StaticString, line: UInt, column: UInt
) {
  reportIssue(
    """
    An "Effect.run" returned from "\(fileID):\(line)" threw an unhandled error:

      \(error)

    All non-cancellation errors must be explicitly handled via the "catch" parameter on \
    "Effect.run", or via a "do" block.
    """,
    fileID: fileID, filePath: filePath, line: line, column: column
  )
}
