// libFuzzer entry point for the broker's JSON decoder, built by Scripts/fuzz.sh json
// together with JSONTape.swift and QuickJSONDecoder.swift. Each input is a JSON document,
// decoded as several types: wherever the fast path gives a value, Foundation's JSONDecoder must
// give the same one, and neither may crash.
import Foundation

private struct Flat: Codable, Equatable {
  var count: Int
  var name: String?
  var ratio: Double?
  var on: Bool?
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

private let quick = QuickJSONDecoder()
private let foundation = JSONDecoder()

private func compare<T: Decodable & Equatable>(_: T.Type, _ data: Data) {
  let fast = quick.quickly(T.self, from: data)
  let expected = try? foundation.decode(T.self, from: data)
  if let fast, fast != expected {
    fatalError("\(T.self): fast path gave \(fast), Foundation \(String(describing: expected))")
  }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONDecoder(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let data = Data(bytes: bytes, count: size)
  compare(Flat.self, data)
  compare(Nested.self, data)
  compare([String: Int64].self, data)
  compare([Double].self, data)
  compare(String.self, data)
  compare([Bool?].self, data)
  return 0
}
