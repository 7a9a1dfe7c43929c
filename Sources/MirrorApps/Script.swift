import Foundation

/// A `--script`: comma-separated commands, `CMDxN` repeating one N times, `wait:MS` pausing.
///
/// ```swift
/// try Script(parsing: "+x3,wait:100,-", commands: ["+", "-", "prime"])
/// // [.command("+"), .command("+"), .command("+"), .wait(.milliseconds(100)), .command("-")]
/// ```
public struct Script: Equatable, Sendable {
  /// One step of a script.
  public enum Step: Equatable, Sendable {
    /// A user command, e.g. `+`.
    case command(String)
    /// A pause.
    case wait(Duration)
  }

  /// The steps, repetitions expanded.
  public let steps: [Step]

  /// Parses a script.
  ///
  /// - Parameters:
  ///   - text: The script.
  ///   - commands: The commands this program understands.
  /// - Throws: ``ScriptError`` naming the first bad item.
  public init(parsing text: String, commands: Set<String>) throws {
    var steps: [Step] = []
    for rawItem in text.split(separator: ",", omittingEmptySubsequences: false) {
      let item = rawItem.trimmingCharacters(in: .whitespaces)
      guard !item.isEmpty else { throw ScriptError(item: item, reason: "empty command") }
      if item.hasPrefix("wait:") {
        guard let milliseconds = Int(item.dropFirst(5)), milliseconds >= 0 else {
          throw ScriptError(item: item, reason: "wait takes milliseconds, e.g. wait:250")
        }
        steps.append(.wait(.milliseconds(milliseconds)))
        continue
      }
      var command = item
      var count = 1
      if let x = item.lastIndex(of: "x"), x != item.startIndex,
        case let digits = item[item.index(after: x)...], !digits.isEmpty,
        digits.allSatisfy({ $0.isASCII && $0.isNumber })
      {
        guard let repeats = Int(digits), repeats > 0, repeats <= 10_000_000 else {
          throw ScriptError(item: item, reason: "repeat count must be 1...10000000")
        }
        command = String(item[..<x])
        count = repeats
      }
      guard commands.contains(command) else {
        let known = commands.sorted().joined(separator: ", ")
        throw ScriptError(
          item: item, reason: "unknown command (expected \(known), wait:MS, or CMDxN to repeat one)")
      }
      steps.append(contentsOf: repeatElement(.command(command), count: count))
    }
    self.steps = steps
  }
}

/// A `--script` that cannot be parsed.
public struct ScriptError: Error, CustomStringConvertible {
  /// The offending item.
  public let item: String
  /// What is wrong with it.
  public let reason: String

  /// A readable explanation.
  public var description: String { "bad --script item \"\(item)\": \(reason)" }
}
