import MacroSupport
import SwiftDiagnostics
public import SwiftSyntax
import SwiftSyntaxBuilder
public import SwiftSyntaxMacros

/// `@JSONCodable`: a struct's `JSONCodable` conformance, reading and writing the members that
/// Codable's synthesized conformance reads and writes, under the same keys.
public enum JSONCodableMacro: ExtensionMacro {
  /// A stored property as Codable's synthesis sees it.
  struct Member {
    /// The name as written, backticks and all, for `self.name`.
    let name: String
    /// The key: the name without backticks.
    let key: String
    /// A `let` with a value of its own: written, but not read.
    let isFixed: Bool
  }

  public static func expansion(
    of node: AttributeSyntax,
    attachedTo declaration: some DeclGroupSyntax,
    providingExtensionsOf type: some TypeSyntaxProtocol,
    conformingTo protocols: [TypeSyntax],
    in context: some MacroExpansionContext
  ) throws -> [ExtensionDeclSyntax] {
    guard declaration.is(StructDeclSyntax.self) else {
      context.diagnose(
        Diagnostic(node: node, message: JSONCodableDiagnostic("'@JSONCodable' applies to a struct")))
      return []
    }
    guard let members = storedMembers(of: declaration, in: context) else { return [] }
    guard !protocols.isEmpty else { return [] }
    let access = declaration.accessPrefix
    let reads = members.filter { !$0.isFixed }.map {
      "self.\($0.name) = try json.decode(\\Self.\($0.name), forKey: \(literal($0.key)))"
    }
    let writes = members.map { "try json.encode(self.\($0.name), forKey: \(literal($0.key)))" }
    let conformance: DeclSyntax = """
      extension \(type.trimmed): QuickJSON.JSONCodable {
        \(raw: access)init(jsonObject json: QuickJSON.JSONObjectReader) throws {
          \(raw: reads.joined(separator: "\n"))
        }
        \(raw: access)func encode(jsonObject json: inout QuickJSON.JSONObjectWriter) throws {
          \(raw: writes.joined(separator: "\n"))
        }
      }
      """
    return [conformance.cast(ExtensionDeclSyntax.self)]
  }

  /// The stored instance properties sorted by their keys' bytes (the order of `.sortedKeys`),
  /// or `nil` after a diagnostic where Codable's synthesis would not be the conformance to copy.
  static func storedMembers(
    of declaration: some DeclGroupSyntax, in context: some MacroExpansionContext
  ) -> [Member]? {
    var members: [Member] = []
    var refused = false
    func refuse(_ node: some SyntaxProtocol, _ message: String) {
      context.diagnose(Diagnostic(node: node, message: JSONCodableDiagnostic(message)))
      refused = true
    }
    for item in declaration.memberBlock.members {
      let decl = item.decl
      if let nested = decl.asProtocol((any NamedDeclSyntax).self), nested.name.text == "CodingKeys"
      {
        refuse(nested.name, "'@JSONCodable' reads the stored properties; 'CodingKeys' renames them")
      }
      if let initializer = decl.as(InitializerDeclSyntax.self),
        initializer.signature.parameterClause.parameters.first?.firstName.text == "from"
      {
        refuse(initializer.initKeyword, "'@JSONCodable' copies synthesized Codable, not 'init(from:)'")
      }
      if let function = decl.as(FunctionDeclSyntax.self), function.name.text == "encode",
        function.signature.parameterClause.parameters.first?.firstName.text == "to"
      {
        refuse(function.name, "'@JSONCodable' copies synthesized Codable, not 'encode(to:)'")
      }
      guard let property = decl.as(VariableDeclSyntax.self), !property.isStatic else { continue }
      if property.modifiers.contains(where: { $0.name.tokenKind == .keyword(.lazy) }) {
        refuse(property.bindingSpecifier, "'@JSONCodable' does not read or write a lazy property")
        continue
      }
      if !property.attributes.isEmpty {
        refuse(property.attributes, "'@JSONCodable' does not read or write a wrapped property")
        continue
      }
      for binding in property.bindings {
        guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else {
          refuse(binding.pattern, "'@JSONCodable' needs one name per binding")
          continue
        }
        guard !binding.isComputed else { continue }
        let name = pattern.identifier.text
        members.append(
          Member(
            name: name,
            key: name.hasPrefix("`") ? String(name.dropFirst().dropLast()) : name,
            isFixed: property.isLet && binding.initializer != nil
          ))
      }
    }
    guard !refused else { return nil }
    return members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
  }

  /// `text` as a string literal.
  static func literal(_ text: String) -> String {
    StringLiteralExprSyntax(content: text).description
  }
}

/// An error of `@JSONCodable`.
struct JSONCodableDiagnostic: DiagnosticMessage {
  let message: String
  var diagnosticID: MessageID { MessageID(domain: "QuickJSON", id: "JSONCodable") }
  var severity: DiagnosticSeverity { .error }

  init(_ message: String) { self.message = message }
}
