// libFuzzer entry point for the wire protocol's frame decoder, built by Scripts/fuzz.sh frames
// together with the SharedBrokerProtocol module's sources (which need only Foundation). Each
// input is cut into frames as [length byte][bytes]...; both decoders must either throw or
// return a message that survives an encode/decode round trip unchanged, read the same from
// `Data` frames as from a receive buffer, and a writer's quick look for its own update must
// agree with them.
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
  let buffer = FrameBuffer(frames)
  guard buffer.frames == frames else { fatalError("a receive buffer changed \(frames)") }
  guard (try? BrokerMessage(frames: buffer)) == (try? BrokerMessage(frames: frames)),
    (try? BrokerMessage(published: buffer)) == (try? BrokerMessage(published: frames))
  else { fatalError("a receive buffer decoded otherwise than its frames: \(frames)") }
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
  // A writer's quick look for its own update reads what the full decode reads, and only for
  // the writer it names.
  if frames.count == 6, let own = BrokerMessage.update(buffer, writtenBy: frames[3]) {
    if case .update(let key, let version, _, let write, _)? = try? BrokerMessage(published: frames),
      (key, version, write) != (own.key, own.version, own.write)
    {
      fatalError("an own update read as \(own), decoded as \(key) \(version) \(write)")
    }
    var other = frames[3]
    other.append(0)
    guard BrokerMessage.update(buffer, writtenBy: other) == nil else {
      fatalError("an update taken as written by another client")
    }
    if let last = other.indices.dropLast().last {
      other = other.dropLast()
      other[last] ^= 1
      guard BrokerMessage.update(buffer, writtenBy: other) == nil else {
        fatalError("an update taken as written by a client one byte apart")
      }
    }
  }
  return 0
}
