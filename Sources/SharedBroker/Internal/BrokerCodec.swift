import Foundation
import QuickJSON

/// How a `.broker` key's value travels: its bytes on the wire and in the broker's data.
struct BrokerCodec<Value>: Sendable {
  let decode: @Sendable (Data) throws -> Value
  let encode: @Sendable (Value) throws -> Data
}

extension BrokerCodec where Value: Codable & Sendable {
  /// JSON as `JSONEncoder` with `.sortedKeys` writes it, through the fast encoder and decoder,
  /// and through the code that `@JSONCodable` generated for a value that has it.
  static var json: Self {
    // Asked once per key, not per value: a generic caller cannot pick the overload itself.
    if let generated = Value.self as? any (JSONCodable & Sendable).Type {
      return generatedCodec(generated) as! Self
    }
    let encoder = QuickJSONEncoder()
    let decoder = QuickJSONDecoder()
    return Self(
      decode: { try decoder.decode(Value.self, from: $0) },
      encode: { try encoder.encode($0) }
    )
  }
}

/// ``BrokerCodec/json`` for a value with generated code, which these overloads pick; as `Any`,
/// so that the caller's existential metatype opens.
private func generatedCodec<Value: JSONCodable & Sendable>(_: Value.Type) -> Any {
  let encoder = QuickJSONEncoder()
  let decoder = QuickJSONDecoder()
  return BrokerCodec<Value>(
    decode: { try decoder.decode(Value.self, from: $0) },
    encode: { try encoder.encode($0) }
  )
}
