import MacroSupport
import SwiftDiagnostics
public import SwiftSyntax
import SwiftSyntaxBuilder
public import SwiftSyntaxMacros

/// `@Presents`: an optional child state in an `@ObservableState` type, stored in a
/// `PresentationState` and reachable as `$name` for `.ifLet(\.$name, action: …)`.
public enum PresentsMacro {}

extension PresentsMacro: AccessorMacro {
  public static func expansion(
    of node: AttributeSyntax,
    providingAccessorsOf declaration: some DeclSyntaxProtocol,
    in context: some MacroExpansionContext
  ) throws -> [AccessorDeclSyntax] {
    guard let property = declaration.as(VariableDeclSyntax.self), let name = property.presented,
      isInObservableState(context)
    else { return [] }
    return [
      """
      @storageRestrictions(initializes: _\(name))
      init(initialValue) {
        _\(name) = Composable.PresentationState(wrappedValue: initialValue)
      }
      """,
      """
      get {
        _$observationRegistrar.access(self, keyPath: \\.\(name))
        return _\(name).wrappedValue
      }
      """,
      """
      set {
        _$observationRegistrar.mutate(self, keyPath: \\.\(name), &_\(name).wrappedValue, newValue, _$isIdentityEqual, _$shouldNotifyObservers)
      }
      """,
    ]
  }
}

extension PresentsMacro: PeerMacro {
  public static func expansion(
    of node: AttributeSyntax,
    providingPeersOf declaration: some DeclSyntaxProtocol,
    in context: some MacroExpansionContext
  ) throws -> [DeclSyntax] {
    guard let property = declaration.as(VariableDeclSyntax.self), let name = property.presented,
      let binding = property.bindings.first
    else { return [] }
    guard isInObservableState(context) else {
      context.diagnose(
        Diagnostic(
          node: node,
          message: ComposableDiagnostic(
            """
            '@Presents' belongs in '@ObservableState' state; elsewhere, write \
            '@PresentationState var \(name.text)'
            """,
            id: "presentsOutsideObservableState"
          )
        )
      )
      return []
    }
    guard let optional = binding.typeAnnotation?.type.as(OptionalTypeSyntax.self) else {
      context.diagnose(
        Diagnostic(
          node: declaration,
          message: ComposableDiagnostic(
            "'@Presents' needs an optional type written out: 'var \(name.text): Child.State?'",
            id: "presentsType"
          )
        )
      )
      return []
    }
    let wrapped = optional.wrappedType.trimmed
    let initial = binding.initializer?.value.trimmedDescription ?? "nil"
    let access = property.modifiers.filter {
      [.keyword(.public), .keyword(.package), .keyword(.fileprivate)].contains($0.name.tokenKind)
    }.map { "\($0.name.text) " }.joined()
    return [
      """
      \(raw: access)var $\(name): Composable.PresentationState<\(wrapped)> {
        get {
          _$observationRegistrar.access(self, keyPath: \\.\(name))
          return _\(name)
        }
        set {
          _$observationRegistrar.mutate(self, keyPath: \\.\(name), &_\(name), newValue, _$isIdentityEqual, _$shouldNotifyObservers)
        }
      }
      """,
      """
      @ObservationStateIgnored private var _\(name) = Composable.PresentationState<\(wrapped)>(wrappedValue: \(raw: initial))
      """,
    ]
  }
}

/// Whether the property is declared in a type marked `@ObservableState`, whose registrar the
/// expansion uses. Where the compiler gives no context, it is assumed.
private func isInObservableState(_ context: some MacroExpansionContext) -> Bool {
  guard let type = context.lexicalContext.first?.asProtocol((any DeclGroupSyntax).self) else {
    return true
  }
  return type.hasAttribute(named: "ObservableState")
}

extension VariableDeclSyntax {
  /// The name of a property `@Presents` can take: a stored instance `var`.
  fileprivate var presented: TokenSyntax? {
    guard !isStatic, !isLet, !isComputed else { return nil }
    return identifier
  }
}
