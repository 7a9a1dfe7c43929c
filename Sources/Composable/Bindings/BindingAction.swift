public import CasePaths
internal import ConcurrencyExtras
public import CustomDump

/// An action that sets the state at a writable key path to a value: what a form field sends.
///
/// A feature whose `Action` conforms to ``BindableAction`` gets every field of its state
/// editable from outside, and ``BindingReducer`` applies the change. The reducer can still
/// react to a particular field by matching its key path:
///
/// ```swift
/// case .binding(\.name):
///   state.isSaveEnabled = !state.name.isEmpty
///   return .none
/// ```
///
/// Send one with `.binding(.set(\.name, "Blob"))`, or from a test store by case key path:
/// `await store.send(\.binding.name, "Blob") { $0.name = "Blob" }`.
public struct BindingAction<Root>: Sendable {
  // Key paths are immutable values, but Swift 6 does not call them Sendable.
  private let _keyPath: UncheckedSendable<PartialKeyPath<Root>>
  /// Writes the value into the state; ``BindingReducer`` calls it.
  let set: @Sendable (inout Root) -> Void
  /// The value written, for equality, matching and dumps.
  let value: any Sendable
  private let valueIsEqualTo: @Sendable (Any) -> Bool

  /// The key path of the field this action sets.
  public var keyPath: PartialKeyPath<Root> { _keyPath.value }

  /// Creates an action that sets `keyPath` to `value`.
  ///
  /// - Parameters:
  ///   - keyPath: The field.
  ///   - value: Its new value.
  /// - Returns: A binding action.
  public static func set<Value: Equatable & Sendable>(
    _ keyPath: WritableKeyPath<Root, Value>, _ value: Value
  ) -> Self {
    set(keyPath, value, onSet: nil)
  }

  /// Like ``set(_:_:)``, and calls `onSet` once the value was written: a store's bindings use
  /// it to notice an action that no ``BindingReducer`` applied.
  static func set<Value: Equatable & Sendable>(
    _ keyPath: WritableKeyPath<Root, Value>, _ value: Value,
    onSet: (@Sendable () -> Void)?
  ) -> Self {
    let writableKeyPath = UncheckedSendable(keyPath)
    return Self(
      _keyPath: UncheckedSendable(keyPath),
      set: {
        $0[keyPath: writableKeyPath.value] = value
        onSet?()
      },
      value: value,
      valueIsEqualTo: { $0 as? Value == value }
    )
  }

  /// Matches a binding action by the field it sets: `case .binding(\.name):`.
  ///
  /// - Parameters:
  ///   - keyPath: The field.
  ///   - bindingAction: The action.
  /// - Returns: Whether the action sets that field.
  public static func ~= <Value>(keyPath: WritableKeyPath<Root, Value>, bindingAction: Self) -> Bool
  {
    bindingAction.keyPath == keyPath
  }
}

extension BindingAction: Equatable {
  /// Two binding actions are equal when they set the same field to equal values.
  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.keyPath == rhs.keyPath && lhs.valueIsEqualTo(rhs.value)
  }
}

extension BindingAction: CasePathable {
  /// The case paths of ``BindingAction``: one per field, so that `\.binding.name` is a case key
  /// path whose value is the field's.
  @dynamicMemberLookup
  public struct AllCasePaths: Sendable {
    /// The binding actions that set `keyPath`, carrying its value.
    public subscript<Value: Equatable & Sendable>(
      dynamicMember keyPath: WritableKeyPath<Root, Value>
    ) -> AnyCasePath<BindingAction, Value> {
      let keyPath = UncheckedSendable(keyPath)
      return AnyCasePath(
        embed: { .set(keyPath.value, $0) },
        extract: { $0.keyPath == keyPath.value ? $0.value as? Value : nil }
      )
    }
  }

  /// The case paths.
  public static var allCasePaths: AllCasePaths { AllCasePaths() }
}

extension BindingAction: CustomDumpReflectable {
  /// Dumps as the call that made it, `.set(\State.name, "Blob")`, so test failures read well.
  public var customDumpMirror: Mirror {
    Mirror(self, children: ["set": (keyPath, value)], displayStyle: .enum)
  }
}
