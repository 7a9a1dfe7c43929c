import Foundation

/// Appends a message's fields to its frames, one frame per field.
struct FrameAppender {
  var frames: [Data]

  mutating func text(_ text: String) { frames.append(Frames.text(text)) }
  mutating func number(_ number: UInt64) { frames.append(Frames.number(number)) }
  mutating func bytes(_ bytes: Data) { frames.append(bytes) }
  mutating func topic(_ key: String) { frames.append(Frames.topic(key)) }

  /// Key and version pairs, two frames each.
  mutating func pairs(_ pairs: [KeyVersion]) {
    for pair in pairs {
      text(pair.key)
      number(pair.version)
    }
  }

  /// Writer and write id pairs, two frames each, in the writers' order.
  mutating func writes(_ writes: [String: UInt64]) {
    for (writer, write) in writes.sorted(by: { $0.key < $1.key }) {
      text(writer)
      number(write)
    }
  }
}
