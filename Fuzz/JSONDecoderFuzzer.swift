// libFuzzer entry point for the broker's JSON decoder and encoder, built by Scripts/fuzz.sh json
// together with the QuickJSON module's sources. Each input is a JSON document, decoded as
// several types: wherever the fast path gives a value, Foundation's JSONDecoder must give the
// same one, and neither may crash. Each value Foundation decodes is encoded again: the fast
// encoder must write Foundation's bytes (`.sortedKeys`). Two of the types read and write
// themselves as `@JSONCodable` has them do (written out here: the fuzzer is built without the
// macro's plugin): read in order with no tape, from the tape, and through Codable, each must
// agree with Foundation.
import Foundation

private struct Flat: Codable, Equatable {
  var count: Int
  var name: String?
  var ratio: Double?
  var on: Bool?
  var blob: Data?
}

private struct Nested: Codable, Equatable {
  enum Kind: Codable, Equatable {
    case plain
    case tagged(Int8, label: String?)
  }
  var flat: Flat?
  var list: [Flat?]?
  var table: [String: [UInt16]]?
  var kind: Kind?
  var deep: [[[Double?]]]?
}

private struct Plain: Codable, Equatable {
  var count: Int
  var names: [String]?
  var table: [String: Int?]?
  var nested: [Plain]?
}

/// What `@JSONCodable` generates, members in the order of their keys' bytes.
extension Flat: JSONCodable {
  init(jsonObject json: JSONObjectReader) throws {
    blob = try json.decode(\Self.blob, forKey: "blob")
    count = try json.decode(\Self.count, forKey: "count")
    name = try json.decode(\Self.name, forKey: "name")
    on = try json.decode(\Self.on, forKey: "on")
    ratio = try json.decode(\Self.ratio, forKey: "ratio")
  }

  func encode(jsonObject json: inout JSONObjectWriter) throws {
    try json.encode(blob, forKey: "blob")
    try json.encode(count, forKey: "count")
    try json.encode(name, forKey: "name")
    try json.encode(on, forKey: "on")
    try json.encode(ratio, forKey: "ratio")
  }
}

extension Plain: JSONCodable {
  init(jsonObject json: JSONObjectReader) throws {
    count = try json.decode(\Self.count, forKey: "count")
    names = try json.decode(\Self.names, forKey: "names")
    nested = try json.decode(\Self.nested, forKey: "nested")
    table = try json.decode(\Self.table, forKey: "table")
  }

  func encode(jsonObject json: inout JSONObjectWriter) throws {
    try json.encode(count, forKey: "count")
    try json.encode(names, forKey: "names")
    try json.encode(nested, forKey: "nested")
    try json.encode(table, forKey: "table")
  }
}

private let quick = QuickJSONDecoder()
private let foundation = JSONDecoder()
private let quickEncoder = QuickJSONEncoder()
private let foundationEncoder: JSONEncoder = {
  let encoder = JSONEncoder()
  encoder.outputFormatting = .sortedKeys
  return encoder
}()

private func compare<T: Codable & Equatable>(_: T.Type, _ data: Data) {
  let fast = quick.quickly(T.self, from: data)
  let expected = try? foundation.decode(T.self, from: data)
  if let fast, fast != expected {
    fatalError("\(T.self): fast path gave \(fast), Foundation \(String(describing: expected))")
  }
  guard let expected else { return }
  let written = try? quickEncoder.encode(expected)
  let wanted = try? foundationEncoder.encode(expected)
  if written != wanted {
    let text = { (data: Data?) in data.map { String(decoding: $0, as: UTF8.self) } ?? "nil" }
    fatalError("\(T.self): encoded \(expected) as \(text(written)), Foundation as \(text(wanted))")
  }
}

/// `compare`, then the generated code's paths.
private func compareGenerated<T: JSONCodable & Equatable>(_: T.Type, _ data: Data) {
  compare(T.self, data)
  let expected = try? foundation.decode(T.self, from: data)
  let paths = [
    ("in order", quick.scanning(T.self, from: data)),
    ("generated", quick.quickly(T.self, from: data)),
  ]
  for (path, value) in paths where value != nil && value != expected {
    fatalError("\(T.self): \(path) gave \(value!), Foundation \(String(describing: expected))")
  }
  let decoded = try? quick.decode(T.self, from: data)
  if decoded != expected {
    fatalError("\(T.self): decoded \(String(describing: decoded)), Foundation \(String(describing: expected))")
  }
  guard let expected else { return }
  if (try? quickEncoder.encode(expected)) != (try? foundationEncoder.encode(expected)) {
    fatalError("\(T.self): the generated code wrote other bytes than Foundation for \(expected)")
  }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONDecoder(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let data = Data(bytes: bytes, count: size)
  compareGenerated(Flat.self, data)
  compare(Nested.self, data)
  compareGenerated(Plain.self, data)
  compare([String: Int64].self, data)
  compare([Double].self, data)
  compare(String.self, data)
  compare([Bool?].self, data)
  compare([Data].self, data)
  return 0
}
