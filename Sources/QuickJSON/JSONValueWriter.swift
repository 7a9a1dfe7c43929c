/// The bytes of a value being written, for ``JSONMember/encode(jsonValue:)``.
public struct JSONValueWriter {
  var bytes: [UInt8] = []

  init(capacity: Int = 128) {
    bytes.reserveCapacity(capacity)
  }

  /// An integer's decimal digits.
  mutating func write<T: FixedWidthInteger>(integer: T) {
    if integer < 0 { bytes.append(UInt8(ascii: "-")) }
    JSONWriter.write(decimal: UInt64(integer.magnitude), into: &bytes)
  }
}
