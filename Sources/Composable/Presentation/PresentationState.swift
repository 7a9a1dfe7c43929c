public import CustomDump

/// The optional state of a presented child feature, with the identity of its presentation.
///
/// In ``ObservableState()`` state, write ``Presents()`` instead; elsewhere the property wrapper
/// works as is. Either way `$destination` is what
/// ``Reducer/ifLet(_:action:destination:fileID:filePath:line:column:)`` takes.
///
/// ```swift
/// @Presents var destination: Destination.State?
/// ```
@propertyWrapper
public struct PresentationState<State> {
  private var state: State?
  /// The presentation's identity: the state's own when it is observable, otherwise one made
  /// when something is presented where nothing was.
  private(set) var presentationID: ObservableStateID?

  /// Creates the presentation, with `wrappedValue` presented or `nil`.
  ///
  /// - Parameter wrappedValue: The child state, or `nil`.
  public init(wrappedValue: State?) {
    state = wrappedValue
    presentationID = wrappedValue.map(Self.identity)
  }

  /// The child state; `nil` when nothing is presented.
  public var wrappedValue: State? {
    get { state }
    set {
      switch (state, newValue) {
      case (_, nil): presentationID = nil
      case (nil, let presented?): presentationID = Self.identity(of: presented)
      case (_, let presented?):
        if presented is any ObservableState { presentationID = Self.identity(of: presented) }
      }
      state = newValue
    }
  }

  /// The presentation itself, for `ifLet`.
  public var projectedValue: Self {
    get { self }
    set { self = newValue }
  }

  private static func identity(of state: State) -> ObservableStateID {
    state is any ObservableState ? ._$id(for: state) : ObservableStateID()
  }

  /// Whether `other` is this same presentation of state that tells its own observers (or both
  /// present nothing): writing one over the other is nothing for the parent's observers.
  func isIdentityEqual(to other: Self) -> Bool {
    guard let presentationID else { return other.presentationID == nil }
    return presentationID == other.presentationID && state is any ObservableState
  }
}

extension PresentationState: Equatable where State: Equatable {
  /// Compares the presented states.
  public static func == (lhs: Self, rhs: Self) -> Bool { lhs.state == rhs.state }
}

extension PresentationState: Hashable where State: Hashable {
  /// Hashes the presented state.
  public func hash(into hasher: inout Hasher) { hasher.combine(state) }
}

extension PresentationState: Sendable where State: Sendable {}

extension PresentationState: CustomDumpRepresentable {
  /// Dumps (and diffs) as the presented state.
  public var customDumpValue: Any { state as Any }
}
