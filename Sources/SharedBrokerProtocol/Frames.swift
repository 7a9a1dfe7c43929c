package import Foundation

/// Encoding and decoding of the ASCII fields of the wire protocol (see PROTOCOL.md): every field
/// is its own frame; numbers are decimal; values are opaque bytes (JSON by convention).
package enum Frames {
  /// `Data(string.utf8)` would look for contiguous bytes with a dynamic cast on every call,
  /// which was a tenth of the broker's own CPU time per write.
  package static func text(_ string: String) -> Data {
    var string = string
    return string.withUTF8 { Data($0) }
  }

  /// ASCII, which every field but a key or a value is in practice, is valid UTF-8 as it stands,
  /// and skips the validating initializer: that one is generic, and looked up type metadata
  /// about a thousand instructions' worth on every call, three times per update.
  package static func text(_ frame: UnsafeRawBufferPointer) -> String? {
    let bytes = frame.assumingMemoryBound(to: UInt8.self)
    guard bytes.allSatisfy({ $0 < 0x80 }) else { return String(validating: bytes, as: UTF8.self) }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Decimal digits only (no sign, no spaces, no leading zero but in `0` itself), at most
  /// `UInt64.max`: one canonical form per number. Parsed by hand: every message carries a few
  /// numbers, and going through `String` cost a reader ~3% of its time.
  package static func number(_ frame: UnsafeRawBufferPointer) -> UInt64? {
    guard !frame.isEmpty, frame.count <= 20, frame.count == 1 || frame[0] != 0x30 else {
      return nil
    }
    var value: UInt64 = 0
    for byte in frame {
      guard byte >= 0x30, byte <= 0x39 else { return nil }
      let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
      let (sum, carried) = shifted.addingReportingOverflow(UInt64(byte - 0x30))
      guard !overflowed, !carried else { return nil }
      value = sum
    }
    return value
  }

  /// Whether two frames hold the same bytes. `Data`'s own `==` took some 600 instructions for
  /// a client id, on every published message a client receives.
  package static func equal(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
    lhs.count == rhs.count
      && (lhs.count == 0 || memcmp(lhs.baseAddress!, rhs.baseAddress!, lhs.count) == 0)
  }

  /// The topic a key's messages are published on: its bytes and a NUL. No key has a NUL, so a
  /// subscription to a topic receives that key's messages and no other key's.
  package static func topic(_ key: String) -> Data {
    var frame = text(key)
    frame.append(0)
    return frame
  }

  /// The key of a topic frame (see ``topic(_:)``), read as ``key(_:)`` reads a key.
  package static func key(topic frame: UnsafeRawBufferPointer) -> String? {
    guard frame.last == 0 else { return nil }
    return key(UnsafeRawBufferPointer(rebasing: frame.dropLast()))
  }

  /// Keys are 1 to 256 bytes of UTF-8 without control characters.
  package static func key(_ frame: UnsafeRawBufferPointer) -> String? {
    guard (1...256).contains(frame.count) else { return nil }
    // Printable ASCII, which most keys are, has no control character to look for.
    if frame.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
      return String(decoding: frame.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }
    guard let key = text(frame), !key.unicodeScalars.contains(where: isControl) else { return nil }
    return key
  }

  /// Unicode's control characters (general category Cc) are exactly these 65 code points, fixed
  /// by its stability policy; comparing is much cheaper than looking the category up.
  private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
  }
}
