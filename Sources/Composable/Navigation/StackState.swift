public import CasePaths
public import CustomDump
internal import Dependencies
public import OrderedCollections

/// The state of a navigation stack: the screens pushed on it, in order, each with a
/// ``StackElementID`` given when it was added.
///
/// ```swift
/// @ObservableState
/// struct State: Equatable {
///   var path = StackState<Path.State>()
/// }
/// // …
/// state.path.append(.detail(DetailFeature.State()))
/// ```
///
/// Ids come from the store the state lives in, counting up from 0; two stacks are equal when
/// their elements are, whatever their ids.
public struct StackState<Element> {
  private var elements: OrderedDictionary<StackElementID, Element> = [:]

  /// An empty stack.
  public init() {}

  /// A stack of `elements`, the first at the bottom.
  ///
  /// - Parameter elements: The elements.
  public init(_ elements: some Sequence<Element>) {
    append(contentsOf: elements)
  }

  /// The ids of the elements, bottom first.
  public var ids: OrderedSet<StackElementID> { elements.keys }

  /// The element with id `id`; `nil` when there is none. Setting a value replaces the element,
  /// or adds it on top under that id; setting `nil` removes it.
  public subscript(id id: StackElementID) -> Element? {
    get { elements[id] }
    set { elements[id] = newValue }
    _modify { yield &elements[id] }
  }

  /// The element with id `id` as the case `path` of an enum of screens: `nil` when there is no
  /// such element or it is another case. Setting a value replaces the element; setting `nil`
  /// changes nothing.
  ///
  /// ```swift
  /// $0.path[id: 0, case: \.detail]?.count = 1
  /// ```
  public subscript<Case>(id id: StackElementID, case path: CaseKeyPath<Element, Case>) -> Case?
  where Element: CasePathable {
    get { elements[id].flatMap { $0[case: path] } }
    set {
      guard let newValue, elements[id]?[case: path] != nil else { return }
      elements[id] = path(newValue)
    }
  }

  /// Removes the element with id `id` and every element above it.
  ///
  /// - Parameter id: The lowest element to remove.
  public mutating func pop(from id: StackElementID) {
    guard let index = elements.index(forKey: id) else { return }
    elements.removeSubrange(index...)
  }

  /// Removes every element above the one with id `id`.
  ///
  /// - Parameter id: The element to keep on top.
  public mutating func pop(to id: StackElementID) {
    guard let index = elements.index(forKey: id) else { return }
    elements.removeSubrange((index + 1)...)
  }

  /// Adds `element` under `id`, which a ``StackAction/push(id:state:)`` names.
  mutating func push(_ element: Element, id: StackElementID) {
    elements[id] = element
  }
}

// MARK: - Collection

extension StackState: RandomAccessCollection, RangeReplaceableCollection, MutableCollection {
  /// The position of the bottom element.
  public var startIndex: Int { elements.elements.startIndex }

  /// The position after the top element.
  public var endIndex: Int { elements.elements.endIndex }

  /// The element at `position`, counted from the bottom.
  public subscript(position: Int) -> Element {
    get { elements.values[position] }
    set { elements.values[position] = newValue }
    _modify { yield &elements.values[position] }
  }

  /// Replaces the elements in `subrange`; the new ones get new ids from the current store.
  ///
  /// - Parameters:
  ///   - subrange: The positions to replace.
  ///   - newElements: The elements to put there.
  public mutating func replaceSubrange(
    _ subrange: Range<Int>, with newElements: some Collection<Element>
  ) {
    let nextID = DependencyValues._current.stackElementID
    elements.removeSubrange(subrange)
    for (offset, element) in zip(subrange.lowerBound..., newElements) {
      elements.updateValue(element, forKey: nextID(), insertingAt: offset)
    }
  }
}

extension StackState: ExpressibleByArrayLiteral {
  /// A stack of the listed elements, the first at the bottom.
  public init(arrayLiteral elements: Element...) {
    self.init(elements)
  }
}

extension StackState: Equatable where Element: Equatable {
  /// Two stacks are equal when their elements are, in order; ids are not compared.
  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.elementsEqual(rhs)
  }
}

extension StackState: Hashable where Element: Hashable {
  /// Hashes the elements, in order.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    for element in self { hasher.combine(element) }
  }
}

extension StackState: Sendable where Element: Sendable {}

extension StackState: CustomDumpReflectable {
  /// Dumps (and diffs) as the array of elements, as equality sees it.
  public var customDumpMirror: Mirror {
    Mirror(self, unlabeledChildren: Array(elements.values), displayStyle: .collection)
  }
}
