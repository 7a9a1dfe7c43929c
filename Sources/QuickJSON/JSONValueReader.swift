/// One value of a parsed document, for ``JSONMember/init(jsonValue:)``.
public struct JSONValueReader {
  let tape: JSONTape
  let node: Int

  var isNull: Bool { tape.nodes[node].kind == .null }

  /// An integer without a fraction or an exponent, within `T`'s range.
  func integer<T: FixedWidthInteger>() throws -> T {
    guard let integer = tape.integer(T.self, at: node) else { throw LeftToFoundation() }
    return integer
  }

  /// The value as an object, or a throw where it is none.
  func object() throws -> JSONObjectReader {
    guard tape.nodes[node].kind == .object else { throw LeftToFoundation() }
    return JSONObjectReader(tape: tape, object: node)
  }

  /// Each element of the value as an array, read by `element`.
  func elements<Element>(_ element: (JSONValueReader) throws -> Element) throws -> [Element] {
    let array = tape.nodes[node]
    guard array.kind == .array else { throw LeftToFoundation() }
    var elements: [Element] = []
    elements.reserveCapacity(array.count)
    var cursor = node + 1
    for _ in 0..<array.count {
      elements.append(try element(JSONValueReader(tape: tape, node: cursor)))
      cursor = tape.nodes[cursor].next
    }
    return elements
  }

  /// Each member of the value as an object, its value read by `member`.
  func members<Member>(_ member: (JSONValueReader) throws -> Member) throws -> [String: Member] {
    let object = tape.nodes[node]
    guard object.kind == .object else { throw LeftToFoundation() }
    var members: [String: Member] = [:]
    members.reserveCapacity(object.count)
    var key = node + 1
    for _ in 0..<object.count {
      members[tape.string(tape.nodes[key])] = try member(JSONValueReader(tape: tape, node: key + 1))
      key = tape.nodes[key + 1].next
    }
    return members
  }
}
