package import Foundation

/// A multipart message's frames, back to back in one buffer that a receive loop reuses: a
/// message then costs no `Data` and no array of its own, and its fields are read in place.
package struct FrameBuffer {
  private var bytes: [UInt8] = []
  /// Where each frame ends in `bytes`; the next one starts there.
  private var ends: [Int] = []

  /// An empty buffer.
  package init() {}

  /// A buffer holding a copy of `frames`.
  package init(_ frames: some Sequence<Data>) {
    for frame in frames { frame.withUnsafeBytes { append($0) } }
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

  /// Runs `body` with the bytes of the frame at `index`, valid only during the call.
  package func withFrame<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    let start = index == 0 ? 0 : ends[index - 1]
    let end = ends[index]
    return bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
  }

  /// The frames, each as its own `Data`.
  package var frames: [Data] { (0..<count).map(data) }
}

extension FrameBuffer: FrameSource {
  func data(_ index: Int) -> Data { withFrame(index) { Data($0) } }
}
