public import CustomDump
public import Observation
internal import Synchronization

/// State whose reads and changes Swift's Observation can track; ``ObservableState()`` conforms.
///
/// `_$id` is the value's identity: copies share it, a newly made value gets a new one. A parent
/// that replaces a child's state with another value tells its observers; one that writes back
/// the same child, changed or not, leaves that to the child's own tracked properties.
///
/// Test failures dump the state through ``customDumpMirror``, which the macro writes so that a
/// tracked property shows under its own name.
public protocol ObservableState: Observable, CustomDumpReflectable {
  /// The identity of this value; generated, not for direct use.
  var _$id: ObservableStateID { get }
}

extension ObservableState {
  /// The value as Swift reflects it (enums, and conformances written by hand).
  public var customDumpMirror: Mirror { Mirror(reflecting: self) }
}

/// The identity of an ``ObservableState`` value, tagged with enum cases along the way.
public struct ObservableStateID: Hashable, Sendable {
  private static let counter = Atomic<UInt64>(1)

  private let location: UInt64
  private var tags: [Int] = []

  private init(location: UInt64) {
    self.location = location
  }

  /// A new identity, distinct from every other.
  public init() {
    location = Self.counter.add(1, ordering: .relaxed).oldValue
  }

  /// The identity of values that have none of their own.
  public static var _$inert: Self { Self(location: 0) }

  /// The identity of `value` when it is observable state, else ``_$inert``.
  ///
  /// - Parameter value: Any value.
  /// - Returns: Its identity.
  public static func _$id<T>(for value: T) -> Self {
    (value as? any ObservableState)?._$id ?? ._$inert
  }

  /// This identity within an enum case.
  ///
  /// - Parameter tag: The case's index.
  /// - Returns: A tagged identity.
  public func _$tag(_ tag: Int) -> Self {
    var copy = self
    copy.tags.append(tag)
    return copy
  }
}

/// Whether two values are the same value (so writing one over the other changes nothing an
/// observer of the parent must hear about); for values with no identity, never.
public func _$isIdentityEqual<T>(_ lhs: T, _ rhs: T) -> Bool { false }

/// Observable state: the same identity.
public func _$isIdentityEqual<T: ObservableState>(_ lhs: T, _ rhs: T) -> Bool {
  lhs._$id == rhs._$id
}

/// Optional observable state: both absent, or the same identity.
public func _$isIdentityEqual<T: ObservableState>(_ lhs: T?, _ rhs: T?) -> Bool {
  switch (lhs, rhs) {
  case (nil, nil): true
  case (let lhs?, let rhs?): lhs._$id == rhs._$id
  default: false
  }
}

/// Presented state: nothing presented on either side, or the same presentation of state that
/// tells its own observers.
public func _$isIdentityEqual<T>(_ lhs: PresentationState<T>, _ rhs: PresentationState<T>) -> Bool {
  lhs.isIdentityEqual(to: rhs)
}

/// Whether a write of `rhs` over `lhs` must tell observers: always, unless equal.
public func _$shouldNotifyObservers<T>(_ lhs: T, _ rhs: T) -> Bool { true }

/// Equatable values: only when they differ.
public func _$shouldNotifyObservers<T: Equatable>(_ lhs: T, _ rhs: T) -> Bool { lhs != rhs }

/// Objects: only when another object is written.
public func _$shouldNotifyObservers<T: AnyObject>(_ lhs: T, _ rhs: T) -> Bool { lhs !== rhs }

/// Equatable objects: only when they differ.
public func _$shouldNotifyObservers<T: Equatable & AnyObject>(_ lhs: T, _ rhs: T) -> Bool {
  lhs != rhs
}
