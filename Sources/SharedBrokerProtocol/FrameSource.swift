import Foundation

/// Frames a message is decoded from, by position from 0: a received ``FrameBuffer``, or frames
/// already in `Data`. The decoders are generic over it and specialized for each inside this
/// module.
protocol FrameSource {
  /// How many frames there are.
  var count: Int { get }
  /// Runs `body` with the bytes of the frame at `index`.
  func withFrame<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R
  /// The frame at `index`, as `Data` a message keeps (a value).
  func data(_ index: Int) -> Data
}

extension FrameSource {
  func text(_ index: Int) -> String? { withFrame(index) { Frames.text($0) } }
  func number(_ index: Int) -> UInt64? { withFrame(index) { Frames.number($0) } }
  func key(_ index: Int) -> String? { withFrame(index) { Frames.key($0) } }

  /// Whether the frame at `index` holds the bytes of `frame`.
  func frame(_ index: Int, equals frame: Data) -> Bool {
    withFrame(index) { bytes in frame.withUnsafeBytes { Frames.equal(bytes, $0) } }
  }
}

extension ArraySlice<Data>: FrameSource {
  func withFrame<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    self[startIndex + index].withUnsafeBytes(body)
  }

  func data(_ index: Int) -> Data { self[startIndex + index] }
}
