import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// A diagnostic message of these macros.
struct ComposableDiagnostic: DiagnosticMessage {
  let message: String
  let diagnosticID: MessageID
  let severity: DiagnosticSeverity

  init(_ message: String, id: String, severity: DiagnosticSeverity = .error) {
    self.message = message
    self.diagnosticID = MessageID(domain: "Composable", id: id)
    self.severity = severity
  }
}

/// A note attached to a diagnostic.
struct ComposableNote: NoteMessage {
  let message: String
  var noteID: MessageID { MessageID(domain: "Composable", id: message) }

  init(_ message: String) { self.message = message }
}

/// The text of a fix-it.
struct ComposableFixIt: FixItMessage {
  let message: String
  var fixItID: MessageID { MessageID(domain: "Composable", id: message) }

  init(_ message: String) { self.message = message }
}

extension VariableDeclSyntax {
  /// The name of a single-binding property.
  var identifier: TokenSyntax? {
    guard bindings.count == 1 else { return nil }
    return bindings.first?.pattern.as(IdentifierPatternSyntax.self)?.identifier.trimmed
  }

  var isStatic: Bool {
    modifiers.contains {
      $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class)
    }
  }

  var isLet: Bool { bindingSpecifier.tokenKind == .keyword(.let) }

  /// Whether the property has a getter (or other non-observer accessors): no storage of its own.
  var isComputed: Bool {
    guard let accessors = bindings.first?.accessorBlock?.accessors else { return false }
    switch accessors {
    case .getter: return true
    case .accessors(let list):
      return list.contains {
        $0.accessorSpecifier.tokenKind != .keyword(.willSet)
          && $0.accessorSpecifier.tokenKind != .keyword(.didSet)
      }
    }
  }

  /// The names of the property's attributes, without module qualifiers or generic arguments.
  var attributeNames: [String] {
    attributes.compactMap { element -> String? in
      guard case .attribute(let attribute) = element else { return nil }
      return attribute.simpleName
    }
  }

  func attribute(named name: String) -> AttributeSyntax? {
    for element in attributes {
      if case .attribute(let attribute) = element, attribute.simpleName == name {
        return attribute
      }
    }
    return nil
  }
}

extension AttributeSyntax {
  /// `Composable.Presents` and `Presents<…>` both read as `Presents`.
  var simpleName: String {
    if let member = attributeName.as(MemberTypeSyntax.self) { return member.name.text }
    if let identifier = attributeName.as(IdentifierTypeSyntax.self) { return identifier.name.text }
    return attributeName.trimmedDescription
  }
}

extension DeclGroupSyntax {
  /// `public ` or `package ` when the declaration has it, so generated members match.
  var accessPrefix: String {
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
  func inherits(_ name: String) -> Bool {
    inheritanceClause?.inheritedTypes.contains {
      let text = $0.type.trimmedDescription
      return text == name || text.hasSuffix(".\(name)")
    } ?? false
  }

  /// The names of the nested types and type aliases.
  var nestedTypeNames: Set<String> {
    Set(
      memberBlock.members.compactMap {
        $0.decl.as(StructDeclSyntax.self)?.name.text
          ?? $0.decl.as(EnumDeclSyntax.self)?.name.text
          ?? $0.decl.as(TypeAliasDeclSyntax.self)?.name.text
          ?? $0.decl.as(ClassDeclSyntax.self)?.name.text
      }
    )
  }

  var isEnum: Bool { self.is(EnumDeclSyntax.self) }
}

extension SyntaxProtocol {
  /// Whether any attribute list of this declaration names `name`.
  func hasAttribute(named name: String) -> Bool {
    guard let attributes = Syntax(self).asProtocol((any WithAttributesSyntax).self)?.attributes
    else { return false }
    return attributes.contains {
      if case .attribute(let attribute) = $0 { return attribute.simpleName == name }
      return false
    }
  }
}
