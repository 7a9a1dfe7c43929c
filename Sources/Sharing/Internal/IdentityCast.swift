/// `value` as `U`, for a caller that knows `U` is almost always `value`'s own type: then a copy,
/// where `as!` goes through the runtime's general dynamic cast, about 300 instructions, on
/// every received update and every comparison of a value with the last one told.
package func identityCast<T, U>(_ value: T, to type: U.Type) -> U {
  guard T.self == U.self else { return forcedCast(value, to: type) }
  return withUnsafePointer(to: value) { pointer in
    pointer.withMemoryRebound(to: U.self, capacity: 1) { $0.pointee }
  }
}

/// Another type (a subclass, an existential): the runtime's cast, which traps when it fails.
/// Apart, so that the fast path does not set up what a cast needs.
@inline(never)
private func forcedCast<T, U>(_ value: T, to _: U.Type) -> U {
  value as! U
}
