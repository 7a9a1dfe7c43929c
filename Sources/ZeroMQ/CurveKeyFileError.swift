import Foundation

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

  /// The text of the file at `path`, or an error that says whether it is missing or unreadable.
  public static func text(of path: String) throws(CurveKeyFileError) -> String {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
      throw CurveKeyFileError(path: path, reason: "no such file")
    }
    guard !isDirectory.boolValue else { throw CurveKeyFileError(path: path, reason: "a directory") }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw CurveKeyFileError(path: path, reason: "cannot be read (permissions?)")
    }
    return String(decoding: data, as: UTF8.self)
  }
}
