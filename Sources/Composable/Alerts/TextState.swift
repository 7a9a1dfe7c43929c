public import CustomDump

/// The text of an alert, a dialog or a button, kept as state: equatable, so tests compare it,
/// and dumped as its plain string, so a failing test's diff reads as the text.
///
/// ```swift
/// TextState("Delete \(item.name)?")
/// ```
///
/// A terminal program prints ``description``; there are no fonts or colours here.
public struct TextState: Hashable, Sendable {
  private var string: String

  /// Creates text that shows `content` as it is.
  ///
  /// - Parameter content: The text.
  public init(_ content: some StringProtocol) {
    string = String(content)
  }

  /// Creates text that shows `content` as it is.
  ///
  /// - Parameter content: The text.
  public init(verbatim content: String) {
    string = content
  }

  /// Joins two texts: `TextState("Hello, ") + TextState(name)`.
  ///
  /// - Parameters:
  ///   - lhs: The first text.
  ///   - rhs: The text after it.
  /// - Returns: Both, one after the other.
  public static func + (lhs: Self, rhs: Self) -> Self {
    Self(verbatim: lhs.string + rhs.string)
  }
}

extension TextState: ExpressibleByStringInterpolation {
  /// Creates text from a literal, interpolations included: `"Delete \(name)?"`.
  ///
  /// - Parameter value: The text.
  public init(stringLiteral value: String) {
    string = value
  }
}

extension TextState: CustomStringConvertible {
  /// The text as a plain string.
  public var description: String { string }
}

extension TextState: CustomDumpRepresentable {
  /// Dumps (and diffs) as the plain string.
  public var customDumpValue: Any { string }
}

extension String {
  /// The plain string of a ``TextState``.
  ///
  /// - Parameter state: The text.
  public init(state: TextState) {
    self = state.description
  }
}
