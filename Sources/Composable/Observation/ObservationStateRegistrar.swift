public import Observation

/// The registrar an ``ObservableState()`` struct keeps: its identity and Swift's
/// `ObservationRegistrar`, shared by the value's copies.
///
/// It takes no part in the state's equality, hashing or coding.
public struct ObservationStateRegistrar: Sendable {
  /// The identity of the state that holds this registrar.
  public let id = ObservableStateID()
  private let registrar = ObservationRegistrar()

  /// Creates a registrar with a new identity.
  public init() {}

  /// Reports a read of a property to whoever is tracking.
  ///
  /// - Parameters:
  ///   - subject: The state.
  ///   - keyPath: The property read.
  public func access<Subject: Observable, Member>(
    _ subject: Subject, keyPath: KeyPath<Subject, Member>
  ) {
    registrar.access(subject, keyPath: keyPath)
  }

  /// Writes a property, telling observers unless the new value is the same value.
  ///
  /// - Parameters:
  ///   - subject: The state.
  ///   - keyPath: The property written.
  ///   - value: The property's storage.
  ///   - newValue: The value to write.
  ///   - isIdentityEqual: Whether the two are the same value.
  ///   - shouldNotifyObservers: Whether the change is one to tell.
  public func mutate<Subject: Observable, Member, Value>(
    _ subject: Subject,
    keyPath: KeyPath<Subject, Member>,
    _ value: inout Value,
    _ newValue: Value,
    _ isIdentityEqual: (Value, Value) -> Bool,
    _ shouldNotifyObservers: (Value, Value) -> Bool
  ) {
    if isIdentityEqual(value, newValue) || !shouldNotifyObservers(value, newValue) {
      value = newValue
    } else {
      registrar.withMutation(of: subject, keyPath: keyPath) { value = newValue }
    }
  }

  /// Starts an in-place change (`state.child.count += 1`): keeps the old value to compare.
  ///
  /// - Parameters:
  ///   - subject: The state.
  ///   - keyPath: The property about to change.
  ///   - value: The property's storage.
  /// - Returns: The old value.
  public func willModify<Subject: Observable, Member, Value>(
    _ subject: Subject, keyPath: KeyPath<Subject, Member>, _ value: inout Value
  ) -> Value {
    value
  }

  /// Ends an in-place change: tells observers if it changed the value.
  ///
  /// - Parameters:
  ///   - subject: The state.
  ///   - keyPath: The property that changed.
  ///   - value: The property's storage, changed.
  ///   - oldValue: What ``willModify(_:keyPath:_:)`` returned.
  ///   - isIdentityEqual: Whether the two are the same value.
  ///   - shouldNotifyObservers: Whether the change is one to tell.
  public func didModify<Subject: Observable, Member, Value>(
    _ subject: Subject,
    keyPath: KeyPath<Subject, Member>,
    _ value: inout Value,
    _ oldValue: Value,
    _ isIdentityEqual: (Value, Value) -> Bool,
    _ shouldNotifyObservers: (Value, Value) -> Bool
  ) {
    // Put back and written again, so that observers hear of it as of any other write.
    let newValue = value
    value = oldValue
    mutate(subject, keyPath: keyPath, &value, newValue, isIdentityEqual, shouldNotifyObservers)
  }
}

extension ObservationStateRegistrar: Equatable, Hashable, Codable {
  /// Registrars never make two states unequal.
  public static func == (_: Self, _: Self) -> Bool { true }

  /// Registrars add nothing to a state's hash.
  public func hash(into _: inout Hasher) {}

  /// A decoded state gets a new registrar.
  public init(from _: any Decoder) throws { self.init() }

  /// Registrars are not encoded.
  public func encode(to _: any Encoder) throws {}
}
