public import CustomDump
internal import Dependencies
internal import Synchronization

/// The identity of an element of a ``StackState``, given when the element is added.
///
/// Ids count up from 0 in each store (and each test store), so a test names them with integer
/// literals: `await store.send(\.path[id: 0].detail.saveButtonTapped)`.
public struct StackElementID: Hashable, Comparable, Sendable, ExpressibleByIntegerLiteral {
  /// Which addition to the stack made this id: 0 for the first in the store, then 1, 2, …
  let generation: Int

  init(generation: Int) {
    self.generation = generation
  }

  /// The id of the element added `value`th (from 0) in the store.
  ///
  /// - Parameter value: The generation.
  public init(integerLiteral value: Int) {
    generation = value
  }

  /// Earlier additions sort first.
  public static func < (lhs: Self, rhs: Self) -> Bool {
    lhs.generation < rhs.generation
  }
}

extension StackElementID: CustomStringConvertible, CustomDumpStringConvertible {
  /// `#0`, `#1`, …
  public var description: String { "#\(generation)" }

  /// `#0`, `#1`, …
  public var customDumpDescription: String { description }
}

/// Hands out the ids of stack elements in order. Each store gets its own, so that ids start at
/// 0 in every test; state made outside a store uses a shared one.
final class StackElementIDGenerator: Sendable {
  private let next: Mutex<Int>

  init(startingAt generation: Int = 0) {
    next = Mutex(generation)
  }

  /// The next id, used up.
  func callAsFunction() -> StackElementID {
    next.withLock { next in
      defer { next += 1 }
      return StackElementID(generation: next)
    }
  }

  /// The id that ``callAsFunction()`` returns next.
  func peek() -> StackElementID {
    StackElementID(generation: next.withLock { $0 })
  }

  /// Uses up every id up to and including `id`, so that a pushed element's id is never
  /// handed out again.
  func skip(past id: StackElementID) {
    next.withLock { $0 = max($0, id.generation + 1) }
  }
}

extension DependencyValues {
  /// The generator of the current store's stack element ids.
  var stackElementID: StackElementIDGenerator {
    get { self[StackElementIDGeneratorKey.self] }
    set { self[StackElementIDGeneratorKey.self] = newValue }
  }
}

private enum StackElementIDGeneratorKey: DependencyKey {
  static let liveValue = StackElementIDGenerator()
  static let testValue = StackElementIDGenerator()
}
