public import QuickJSON

/// Generates a struct's ``QuickJSON/JSONCodable`` conformance from its stored properties, as
/// Codable's synthesized conformance reads and writes them: a member per stored property under
/// its name, `nil` optionals left out, a `let` with a value of its own written but not read.
///
/// ```swift
/// @JSONCodable
/// struct Stats: Codable, Equatable {
///   var count = 0
///   var names: [String] = []
///   var best: Int?
/// }
/// ```
///
/// The struct keeps its Codable conformance, which the generated code falls back to: one with
/// `CodingKeys`, its own `init(from:)` or `encode(to:)`, or a property wrapper is refused.
@attached(
  extension, conformances: JSONCodable, names: named(init(jsonObject:)), named(encode(jsonObject:))
)
public macro JSONCodable() = #externalMacro(module: "QuickJSONMacros", type: "JSONCodableMacro")
