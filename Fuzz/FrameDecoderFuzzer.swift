// libFuzzer entry point for the wire protocol's frame decoder, built by Scripts/fuzz.sh frames
// together with BrokerMessage.swift and Frames.swift (nothing else: the decoder needs only
// Foundation). Each input is cut into frames as [length byte][bytes]...; both decoders must
// either throw or return a message that survives an encode/decode round trip unchanged.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  var frames: [Data] = []
  var index = 0
  while index < bytes.count {
    let length = min(Int(bytes[index]), bytes.count - index - 1)
    frames.append(Data(bytes[(index + 1)..<(index + 1 + length)]))
    index += 1 + length
  }
  if let message = try? BrokerMessage(frames: frames) {
    guard (try? BrokerMessage(frames: message.frames)) == message else {
      fatalError("request/reply round trip changed \(message)")
    }
  }
  if let message = try? BrokerMessage(published: frames) {
    guard (try? BrokerMessage(published: message.frames)) == message else {
      fatalError("published round trip changed \(message)")
    }
  }
  return 0
}
