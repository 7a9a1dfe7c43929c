import Foundation

/// Encoding and decoding of the ASCII fields of the wire protocol (see PROTOCOL.md): every field
/// is its own frame; numbers are decimal; values are opaque bytes (JSON by convention).
enum Frames {
  static func text(_ string: String) -> Data { Data(string.utf8) }

  static func number(_ value: UInt64) -> Data { Data(String(value).utf8) }

  static func text(_ frame: Data) -> String? {
    String(data: frame, encoding: .utf8)
  }

  static func number(_ frame: Data) -> UInt64? {
    guard !frame.isEmpty, frame.count <= 20, frame.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
      return nil
    }
    return UInt64(String(decoding: frame, as: UTF8.self))
  }

  /// Keys are 1 to 256 bytes of UTF-8 without control characters.
  static func key(_ frame: Data) -> String? {
    guard (1...256).contains(frame.count), let key = text(frame),
      !key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
    else { return nil }
    return key
  }
}
