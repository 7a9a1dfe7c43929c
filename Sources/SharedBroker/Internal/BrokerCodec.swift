import Foundation
import QuickJSON

/// How a `.broker` key's value travels: its bytes on the wire and in the broker's data.
struct BrokerCodec<Value>: Sendable {
  let decode: @Sendable (Data) throws -> Value
  let encode: @Sendable (Value) throws -> Data
}

extension BrokerCodec where Value: Codable & Sendable {
  /// JSON as `JSONEncoder` with `.sortedKeys` writes it, through the fast encoder and decoder.
  static var json: Self {
    let encoder = QuickJSONEncoder()
    let decoder = QuickJSONDecoder()
    return Self(
      decode: { try decoder.decode(Value.self, from: $0) },
      encode: { try encoder.encode($0) }
    )
  }
}
