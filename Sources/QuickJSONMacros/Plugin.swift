import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that serves QuickJSON's macro.
@main
struct QuickJSONMacrosPlugin: CompilerPlugin {
  let providingMacros: [any Macro.Type] = [JSONCodableMacro.self]
}
