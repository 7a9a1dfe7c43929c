/// A line diff of two dumps: unchanged lines indented, removed lines "−", added lines "+".
struct LineDiff: CustomStringConvertible {
  let expected: [Substring]
  let actual: [Substring]

  init(expected: String, actual: String) {
    self.expected = expected.split(separator: "\n", omittingEmptySubsequences: false)
    self.actual = actual.split(separator: "\n", omittingEmptySubsequences: false)
  }

  var description: String {
    // Longest common subsequence table, built from the end.
    let (n, m) = (expected.count, actual.count)
    var table = Array(repeating: Array(repeating: 0, count: m + 1), count: n + 1)
    for i in stride(from: n - 1, through: 0, by: -1) {
      for j in stride(from: m - 1, through: 0, by: -1) {
        table[i][j] =
          expected[i] == actual[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
      }
    }
    var lines: [String] = []
    var (i, j) = (0, 0)
    while i < n || j < m {
      if i < n, j < m, expected[i] == actual[j] {
        lines.append("  " + expected[i])
        i += 1
        j += 1
      } else if i < n, j == m || table[i + 1][j] >= table[i][j + 1] {
        lines.append("− " + expected[i])
        i += 1
      } else {
        lines.append("+ " + actual[j])
        j += 1
      }
    }
    return lines.joined(separator: "\n")
  }
}
