import MacroSupport
import SwiftDiagnostics
public import SwiftSyntax
import SwiftSyntaxBuilder
public import SwiftSyntaxMacros

/// `@ObservableState`: makes a state struct observable per property (each stored `var` becomes
/// tracked), or gives a state enum an identity that changes with its case.
public enum ObservableStateMacro {
}

extension ObservableStateMacro: MemberMacro {
  public static func expansion(
    of node: AttributeSyntax,
    providingMembersOf declaration: some DeclGroupSyntax,
    conformingTo protocols: [TypeSyntax],
    in context: some MacroExpansionContext
  ) throws -> [DeclSyntax] {
    if let enumDecl = declaration.as(EnumDeclSyntax.self) {
      return [enumIdentity(enumDecl)]
    }
    guard declaration.is(StructDeclSyntax.self) else {
      let kind = declaration.is(ClassDeclSyntax.self) ? "class" : "actor"
      context.diagnose(
        Diagnostic(
          node: node,
          message: ComposableDiagnostic(
            "'@ObservableState' cannot be applied to \(kind) type: state is a struct or an enum",
            id: "invalidApplication"
          )
        )
      )
      return []
    }
    let access = declaration.accessPrefix
    return [
      "var _$observationRegistrar = Composable.ObservationStateRegistrar()",
      """
      \(raw: access)var _$id: Composable.ObservableStateID {
        _$observationRegistrar.id
      }
      """,
      dumpMirror(declaration, access: access),
    ]
  }

  /// A mirror with the properties under their own names: tracked storage is `_count`, which
  /// test failures should show as `count`.
  private static func dumpMirror(_ declaration: some DeclGroupSyntax, access: String) -> DeclSyntax
  {
    let children = declaration.memberBlock.members.compactMap { member -> String? in
      guard let property = member.decl.as(VariableDeclSyntax.self), !property.isStatic,
        !property.isComputed, let name = property.identifier?.text
      else { return nil }
      let storedUnderscored =
        !property.isLet
        && (!property.attributeNames.isEmpty
          ? !property.attributeNames.contains("ObservationStateIgnored")
          : property.bindings.first?.accessorBlock == nil)
      return "\"\(name)\": \(storedUnderscored ? "_\(name)" : name) as Any"
    }
    let list = children.isEmpty ? ":" : children.joined(separator: ", ")
    return """
      \(raw: access)var customDumpMirror: Mirror {
        Mirror(self, children: [\(raw: list)], displayStyle: .struct)
      }
      """
  }

  /// An enum's identity: the identity of the case's state (when it has one), tagged with the
  /// case, so a change of case is a change of identity.
  private static func enumIdentity(_ enumDecl: EnumDeclSyntax) -> DeclSyntax {
    let elements = enumDecl.memberBlock.members.flatMap {
      $0.decl.as(EnumCaseDeclSyntax.self)?.elements.map { $0 } ?? []
    }
    let cases = elements.enumerated().map { index, element in
      if element.parameterClause?.parameters.count == 1 {
        return """
          case let .\(element.name.text)(state):
            return ._$id(for: state)._$tag(\(index))
          """
      }
      return """
        case .\(element.name.text):
          return ._$inert._$tag(\(index))
        """
    }
    let body = cases.isEmpty ? "._$inert" : "switch self {\n\(cases.joined(separator: "\n"))\n}"
    return """
      \(raw: enumDecl.accessPrefix)var _$id: Composable.ObservableStateID {
        \(raw: body)
      }
      """
  }
}

extension ObservableStateMacro: MemberAttributeMacro {
  public static func expansion(
    of node: AttributeSyntax,
    attachedTo declaration: some DeclGroupSyntax,
    providingAttributesFor member: some DeclSyntaxProtocol,
    in context: some MacroExpansionContext
  ) throws -> [AttributeSyntax] {
    guard declaration.is(StructDeclSyntax.self),
      let property = member.as(VariableDeclSyntax.self),
      !property.isStatic, !property.isLet, !property.isComputed,
      property.identifier != nil
    else { return [] }
    if let attribute = property.attribute(named: "PresentationState") {
      context.diagnose(
        Diagnostic(
          node: attribute,
          message: ComposableDiagnostic(
            "'@PresentationState' cannot be used in '@ObservableState'", id: "presentationState"
          ),
          fixIt: .replace(
            message: ComposableFixIt("Use '@Presents' instead"),
            oldNode: attribute,
            newNode: attribute.with(
              \.attributeName,
              TypeSyntax(
                IdentifierTypeSyntax(
                  name: .identifier(
                    "Presents", trailingTrivia: attribute.attributeName.trailingTrivia)
                )
              )
            )
          )
        )
      )
      return []
    }
    // Any attribute is a property wrapper (`@Shared`, `@SharedReader`), `@Presents`, or a
    // choice made by hand; observers (`didSet`) would be lost. Such properties stay as written.
    guard property.attributeNames.isEmpty, property.bindings.first?.accessorBlock == nil
    else { return [] }
    return ["@ObservationStateTracked"]
  }
}

extension ObservableStateMacro: ExtensionMacro {
  public static func expansion(
    of node: AttributeSyntax,
    attachedTo declaration: some DeclGroupSyntax,
    providingExtensionsOf type: some TypeSyntaxProtocol,
    conformingTo protocols: [TypeSyntax],
    in context: some MacroExpansionContext
  ) throws -> [ExtensionDeclSyntax] {
    guard declaration.is(StructDeclSyntax.self) || declaration.is(EnumDeclSyntax.self),
      !declaration.inherits("ObservableState")
    else { return [] }
    return [try ExtensionDeclSyntax("extension \(type.trimmed): Composable.ObservableState {}")]
  }
}

/// `@ObservationStateTracked`: turns a stored property into one that reports reads to, and
/// changes through, the state's registrar. `@ObservableState` adds it; it is not for direct use.
public enum ObservationStateTrackedMacro {}

extension ObservationStateTrackedMacro: AccessorMacro {
  public static func expansion(
    of node: AttributeSyntax,
    providingAccessorsOf declaration: some DeclSyntaxProtocol,
    in context: some MacroExpansionContext
  ) throws -> [AccessorDeclSyntax] {
    guard let property = declaration.as(VariableDeclSyntax.self),
      let name = property.identifier, !property.isComputed
    else { return [] }
    return [
      """
      @storageRestrictions(initializes: _\(name))
      init(initialValue) {
        _\(name) = initialValue
      }
      """,
      """
      get {
        _$observationRegistrar.access(self, keyPath: \\.\(name))
        return _\(name)
      }
      """,
      """
      set {
        _$observationRegistrar.mutate(self, keyPath: \\.\(name), &_\(name), newValue, _$isIdentityEqual, _$shouldNotifyObservers)
      }
      """,
      """
      _modify {
        let oldValue = _$observationRegistrar.willModify(self, keyPath: \\.\(name), &_\(name))
        defer {
          _$observationRegistrar.didModify(self, keyPath: \\.\(name), &_\(name), oldValue, _$isIdentityEqual, _$shouldNotifyObservers)
        }
        yield &_\(name)
      }
      """,
    ]
  }
}

extension ObservationStateTrackedMacro: PeerMacro {
  public static func expansion(
    of node: AttributeSyntax,
    providingPeersOf declaration: some DeclSyntaxProtocol,
    in context: some MacroExpansionContext
  ) throws -> [DeclSyntax] {
    guard let property = declaration.as(VariableDeclSyntax.self),
      let binding = property.bindings.first, let name = property.identifier,
      !property.isComputed
    else { return [] }
    let storage =
      binding
      .with(\.pattern, PatternSyntax(IdentifierPatternSyntax(identifier: "_\(raw: name.text)")))
      .with(\.accessorBlock, nil)
      .with(\.trailingComma, nil)
    return ["@ObservationStateIgnored private var \(storage.trimmed)"]
  }
}

/// `@ObservationStateIgnored`: leaves a property of an `@ObservableState` type untracked.
public enum ObservationStateIgnoredMacro: PeerMacro {
  public static func expansion(
    of node: AttributeSyntax,
    providingPeersOf declaration: some DeclSyntaxProtocol,
    in context: some MacroExpansionContext
  ) throws -> [DeclSyntax] {
    []
  }
}
