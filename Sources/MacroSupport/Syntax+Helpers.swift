// Questions about declarations that the package's macros ask alike.
package import SwiftSyntax

extension VariableDeclSyntax {
  /// The name of a single-binding property.
  package var identifier: TokenSyntax? {
    guard bindings.count == 1 else { return nil }
    return bindings.first?.pattern.as(IdentifierPatternSyntax.self)?.identifier.trimmed
  }

  package var isStatic: Bool {
    modifiers.contains {
      $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class)
    }
  }

  package var isLet: Bool { bindingSpecifier.tokenKind == .keyword(.let) }

  /// Whether the (first) property has a getter: no storage of its own.
  package var isComputed: Bool { bindings.first?.isComputed ?? false }

  /// The names of the property's attributes, without module qualifiers or generic arguments.
  package var attributeNames: [String] {
    attributes.compactMap { element -> String? in
      guard case .attribute(let attribute) = element else { return nil }
      return attribute.simpleName
    }
  }

  package func attribute(named name: String) -> AttributeSyntax? {
    for element in attributes {
      if case .attribute(let attribute) = element, attribute.simpleName == name {
        return attribute
      }
    }
    return nil
  }
}

extension PatternBindingSyntax {
  /// Whether the binding has a getter (or other non-observer accessors): no storage of its own.
  package var isComputed: Bool {
    guard let accessors = accessorBlock?.accessors else { return false }
    switch accessors {
    case .getter: return true
    case .accessors(let list):
      return list.contains {
        $0.accessorSpecifier.tokenKind != .keyword(.willSet)
          && $0.accessorSpecifier.tokenKind != .keyword(.didSet)
      }
    }
  }
}

extension AttributeSyntax {
  /// `Composable.Presents` and `Presents<…>` both read as `Presents`.
  package var simpleName: String {
    if let member = attributeName.as(MemberTypeSyntax.self) { return member.name.text }
    if let identifier = attributeName.as(IdentifierTypeSyntax.self) { return identifier.name.text }
    return attributeName.trimmedDescription
  }
}

extension DeclGroupSyntax {
  /// `public ` or `package ` when the declaration has it, so generated members match.
  package var accessPrefix: String {
    for modifier in modifiers {
      switch modifier.name.tokenKind {
      case .keyword(.public): return "public "
      case .keyword(.package): return "package "
      default: continue
      }
    }
    return ""
  }

  /// Whether the type's inheritance clause names `name` (plain or module-qualified).
  package func inherits(_ name: String) -> Bool {
    inheritanceClause?.inheritedTypes.contains {
      let text = $0.type.trimmedDescription
      return text == name || text.hasSuffix(".\(name)")
    } ?? false
  }

  /// The names of the nested types and type aliases.
  package var nestedTypeNames: Set<String> {
    Set(
      memberBlock.members.compactMap {
        $0.decl.as(StructDeclSyntax.self)?.name.text
          ?? $0.decl.as(EnumDeclSyntax.self)?.name.text
          ?? $0.decl.as(TypeAliasDeclSyntax.self)?.name.text
          ?? $0.decl.as(ClassDeclSyntax.self)?.name.text
      }
    )
  }

  package var isEnum: Bool { self.is(EnumDeclSyntax.self) }
}

extension SyntaxProtocol {
  /// Whether any attribute list of this declaration names `name`.
  package func hasAttribute(named name: String) -> Bool {
    guard let attributes = Syntax(self).asProtocol((any WithAttributesSyntax).self)?.attributes
    else { return false }
    return attributes.contains {
      if case .attribute(let attribute) = $0 { return attribute.simpleName == name }
      return false
    }
  }
}
