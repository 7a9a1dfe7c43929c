extension Array {
  /// `removeFirst(_:)`, with the usual case (every element: each write confirmed before the
  /// next one) kept off the generic paths of `removeFirst(_:)` and `removeAll(keepingCapacity:)`:
  /// called from generic code, each looked up type metadata several times.
  mutating func removePrefix(_ count: Int) {
    if count == self.count {
      self = []
    } else if count > 0 {
      removeFirst(count)
    }
  }
}
