internal import CustomDump

extension Reducer {
  /// Prints each action this reducer receives and the state change it made, as a diff: for
  /// debugging, as TCA's `_printChanges()`.
  ///
  /// ```swift
  /// Reduce { state, action in … }
  ///   ._printChanges()
  /// ```
  ///
  /// - Parameter printer: Where the text goes; standard output by default.
  /// - Returns: A reducer that runs this one and prints.
  public func _printChanges(
    _ printer: @escaping (String) -> Void = { print($0, terminator: "") }
  ) -> _PrintChangesReducer<Self> {
    _PrintChangesReducer(base: self, printer: printer)
  }
}

/// The reducer built by ``Reducer/_printChanges(_:)``.
public struct _PrintChangesReducer<Base: Reducer>: Reducer {
  let base: Base
  let printer: (String) -> Void

  /// Runs the base reducer and prints the action and the change.
  public func reduce(into state: inout Base.State, action: Base.Action) -> Effect<Base.Action> {
    let before = state
    let effect = base.reduce(into: &state, action: action)
    var output = "received action:\n"
    customDump(action, to: &output, indent: 2)
    output += "\n" + (diff(before, state).map { $0 + "\n" } ?? "  (No state changes)\n")
    printer(output)
    return effect
  }
}
