import MacroSupport
import SwiftDiagnostics
public import SwiftSyntax
import SwiftSyntaxBuilder
public import SwiftSyntaxMacros

/// `@ViewAction(for: Feature.self)`: conforms a type holding `store` to `ViewActionSending`,
/// whose `send(_:)` wraps a view action in `.view(…)`.
public enum ViewActionMacro {}

extension ViewActionMacro: ExtensionMacro {
  public static func expansion(
    of node: AttributeSyntax,
    attachedTo declaration: some DeclGroupSyntax,
    providingExtensionsOf type: some TypeSyntaxProtocol,
    conformingTo protocols: [TypeSyntax],
    in context: some MacroExpansionContext
  ) throws -> [ExtensionDeclSyntax] {
    let hasStore = declaration.memberBlock.members.contains {
      $0.decl.as(VariableDeclSyntax.self)?.bindings.contains {
        $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text == "store"
      } ?? false
    }
    guard hasStore else {
      context.diagnose(
        Diagnostic(
          node: node,
          message: ComposableDiagnostic(
            "'@ViewAction' requires \(type.trimmed) to have a 'store' property of type 'Store'",
            id: "missingStore"
          )
        )
      )
      return []
    }
    guard !declaration.inherits("ViewActionSending") else { return [] }
    return [
      try ExtensionDeclSyntax("extension \(type.trimmed): Composable.ViewActionSending {}")
    ]
  }
}
