/// The bytes of a value being written, for ``JSONMember/encode(jsonValue:)``.
public struct JSONValueWriter {
  var bytes: [UInt8] = []

  init(capacity: Int = 128) {
    bytes.reserveCapacity(capacity)
  }
}
