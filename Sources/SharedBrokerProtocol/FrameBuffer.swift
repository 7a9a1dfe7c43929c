package import Foundation

/// A multipart message's frames, back to back in one buffer that a loop reuses: a message then
/// costs no `Data` and no array of its own. A receive loop reads the fields in place; a sender
/// writes them in and hands the frames to its socket.
package struct FrameBuffer {
  private var bytes: [UInt8] = []
  /// Where each frame ends in `bytes`; the next one starts there.
  private var ends: [Int] = []

  /// An empty buffer.
  package init() {}

  /// A buffer holding a copy of `frames`.
  package init(_ frames: some Sequence<Data>) {
    for frame in frames { append(frame) }
  }

  /// How many frames it holds.
  package var count: Int { ends.count }

  /// How many bytes its frames hold together.
  package var byteCount: Int { bytes.count }

  /// Empties the buffer, keeping its storage for the next message.
  package mutating func removeAll() {
    bytes.removeAll(keepingCapacity: true)
    ends.removeAll(keepingCapacity: true)
  }

  /// Adds a frame after the others.
  package mutating func append(_ frame: UnsafeRawBufferPointer) {
    bytes.append(contentsOf: frame)
    ends.append(bytes.count)
  }

  /// Adds a frame holding `frame`'s bytes.
  package mutating func append(_ frame: Data) {
    frame.withUnsafeBytes { append($0) }
  }

  /// Adds a text field: its UTF-8 bytes.
  package mutating func append(text: String) {
    var text = text
    text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
  }

  /// Adds a number field in its one form, written digit by digit on the stack: going through
  /// `String(value)` cost a generic description call per number, about 200 instructions.
  package mutating func append(number: UInt64) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
      var value = number
      var start = 20
      repeat {
        start -= 1
        digits[start] = 0x30 + UInt8(value % 10)
        value /= 10
      } while value > 0
      append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: digits[start...])))
    }
  }

  /// Adds the topic frame of `key`'s published messages: its bytes and a NUL (see
  /// ``Frames/topic(_:)``).
  package mutating func append(topic key: String) {
    append(text: key)
    bytes.append(0)
    ends[ends.count - 1] = bytes.count
  }

  /// Adds key and version pairs, two frames each.
  package mutating func append(pairs: [KeyVersion]) {
    for pair in pairs {
      append(text: pair.key)
      append(number: pair.version)
    }
  }

  /// Adds writer and write id pairs, two frames each, in the writers' order.
  package mutating func append(writes: [String: UInt64]) {
    for (writer, write) in writes.sorted(by: { $0.key < $1.key }) {
      append(text: writer)
      append(number: write)
    }
  }

  /// Runs `body` with the bytes of the frame at `index`, valid only during the call.
  package func withFrame<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    let start = index == 0 ? 0 : ends[index - 1]
    let end = ends[index]
    return bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
  }

  /// Hands the frames to `send` in order, each with whether more follow, and stops at the
  /// first one it did not take: a socket's sends, frame by frame, with no `Data` per frame.
  ///
  /// - Returns: Whether `send` took every frame.
  package func send(
    _ send: (_ frame: UnsafeRawBufferPointer, _ more: Bool) throws -> Bool
  ) rethrows -> Bool {
    try bytes.withUnsafeBytes { bytes in
      var start = 0
      for (index, end) in ends.enumerated() {
        let frame = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        guard try send(frame, index < ends.count - 1) else { return false }
        start = end
      }
      return true
    }
  }

  /// The frames, each as its own `Data`.
  package var frames: [Data] { (0..<count).map(data) }
}

extension FrameBuffer: FrameSource {
  func data(_ index: Int) -> Data { withFrame(index) { Data($0) } }
}
