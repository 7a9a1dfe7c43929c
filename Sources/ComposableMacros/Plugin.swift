import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that serves Composable's macros.
@main
struct ComposableMacrosPlugin: CompilerPlugin {
  let providingMacros: [any Macro.Type] = [
    ReducerMacro.self,
    ObservableStateMacro.self,
    ObservationStateTrackedMacro.self,
    ObservationStateIgnoredMacro.self,
    PresentsMacro.self,
    ViewActionMacro.self,
  ]
}
