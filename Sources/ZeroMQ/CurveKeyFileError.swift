/// Why a file of CURVE keys could not be used: missing, unreadable, or not holding keys.
public struct CurveKeyFileError: Error, Equatable, CustomStringConvertible {
  /// The file.
  public let path: String
  /// What is wrong with it.
  public let reason: String

  /// An error about the file at `path`.
  public init(path: String, reason: String) {
    self.path = path
    self.reason = reason
  }

  /// `"PATH": REASON`.
  public var description: String { "\(String(reflecting: path)): \(reason)" }
}
