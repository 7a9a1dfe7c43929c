/// Where a reader's value is: a node of a parsed tape, or the place where a scanner reading the
/// document in key order stands.
enum JSONSource {
  case tape(JSONTape, node: Int)
  case scanner(JSONScanner)
}
