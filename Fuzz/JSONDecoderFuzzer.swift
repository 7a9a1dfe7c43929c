// libFuzzer entry point for the broker's JSON decoder and encoder, built by Scripts/fuzz.sh json
// together with the QuickJSON module's sources. Each input is a JSON document, decoded as
// several types: wherever the fast path gives a value, Foundation's JSONDecoder must give the
// same one, and neither may crash. Each value Foundation decodes is encoded again: the fast
// encoder must write Foundation's bytes (`.sortedKeys`).
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

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONDecoder(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let data = Data(bytes: bytes, count: size)
  compare(Flat.self, data)
  compare(Nested.self, data)
  compare(Plain.self, data)
  compare([String: Int64].self, data)
  compare([Double].self, data)
  compare(String.self, data)
  compare([Bool?].self, data)
  compare([Data].self, data)
  return 0
}
