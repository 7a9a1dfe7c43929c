/// The coding-path key of an array element.
/// Shared by ``QuickJSONDecoder`` and ``QuickJSONEncoder``.
struct IndexKey: CodingKey {
  let intValue: Int?
  var stringValue: String { "Index \(intValue ?? 0)" }
  init(_ index: Int) { intValue = index }
  init?(stringValue _: String) { nil }
  init?(intValue: Int) { self.intValue = intValue }
}
