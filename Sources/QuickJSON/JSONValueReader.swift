/// One value of a document, for ``JSONMember/init(jsonValue:)``: a node of a parsed tape, or
/// the value where a scanner reading the document in order stands.
public struct JSONValueReader {
  let source: JSONSource

  init(_ source: JSONSource) {
    self.source = source
  }

  /// Whether the value is `null` (taken, when scanning).
  func null() throws -> Bool {
    switch source {
    case .tape(let tape, let node): tape.nodes[node].kind == .null
    case .scanner(let scanner): try scanner.null()
    }
  }

  func bool() throws -> Bool {
    switch source {
    case .tape(let tape, let node):
      guard let bool = tape.bool(at: node) else { throw LeftToFoundation() }
      return bool
    case .scanner(let scanner):
      return try scanner.bool()
    }
  }

  func string() throws -> String {
    switch source {
    case .tape(let tape, let node):
      guard let string = tape.string(at: node) else { throw LeftToFoundation() }
      return string
    case .scanner(let scanner):
      return try scanner.string()
    }
  }

  /// An integer without a fraction or an exponent, within `T`'s range.
  func integer<T: FixedWidthInteger>() throws -> T {
    switch source {
    case .tape(let tape, let node):
      guard let integer = tape.integer(T.self, at: node) else { throw LeftToFoundation() }
      return integer
    case .scanner(let scanner):
      return try scanner.integer()
    }
  }

  func double() throws -> Double {
    switch source {
    case .tape(let tape, let node):
      guard let double = tape.double(at: node) else { throw LeftToFoundation() }
      return double
    case .scanner(let scanner):
      return try scanner.double()
    }
  }

  /// Reads the value as an object with `body`, which reads its members through the reader it
  /// is given; a scanner then steps over the members left.
  func object<Result>(_ body: (JSONObjectReader) throws -> Result) throws -> Result {
    switch source {
    case .tape(let tape, let node):
      guard tape.nodes[node].kind == .object else { throw LeftToFoundation() }
      return try body(JSONObjectReader(.tape(tape, node: node)))
    case .scanner(let scanner):
      // The enclosing object's place, for after this one.
      let enclosing = scanner.object
      try scanner.beginObject()
      let result = try body(JSONObjectReader(.scanner(scanner)))
      try scanner.endObject()
      scanner.object = enclosing
      return result
    }
  }

  /// Each element of the value as an array, read by `element`.
  func elements<Element>(_ element: (JSONValueReader) throws -> Element) throws -> [Element] {
    switch source {
    case .tape(let tape, let node):
      let array = tape.nodes[node]
      guard array.kind == .array else { throw LeftToFoundation() }
      var elements: [Element] = []
      elements.reserveCapacity(array.count)
      var cursor = node + 1
      for _ in 0..<array.count {
        elements.append(try element(JSONValueReader(.tape(tape, node: cursor))))
        cursor = tape.nodes[cursor].next
      }
      return elements
    case .scanner(let scanner):
      return try scanner.elements { try element(self) }
    }
  }

  /// Each member of the value as an object, its value read by `member`.
  func members<Member>(_ member: (JSONValueReader) throws -> Member) throws -> [String: Member] {
    switch source {
    case .tape(let tape, let node):
      let object = tape.nodes[node]
      guard object.kind == .object else { throw LeftToFoundation() }
      var members: [String: Member] = [:]
      members.reserveCapacity(object.count)
      var key = node + 1
      for _ in 0..<object.count {
        members[tape.string(tape.nodes[key])] = try member(
          JSONValueReader(.tape(tape, node: key + 1)))
        key = tape.nodes[key + 1].next
      }
      return members
    case .scanner(let scanner):
      return try scanner.members { try member(self) }
    }
  }
}
