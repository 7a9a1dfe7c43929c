import MacroSupport
import SwiftDiagnostics
public import SwiftSyntax
import SwiftSyntaxBuilder
public import SwiftSyntaxMacros

/// `@Reducer`: on a struct, the `Reducer` conformance, `@CasePathable` actions and a result
/// builder on `body`; on an enum of reducers (`case detail(DetailFeature)`), the destination
/// pattern: `State` and `Action` enums with a case per reducer, and a `body` that scopes each.
public enum ReducerMacro {}

extension ReducerMacro: ExtensionMacro {
  public static func expansion(
    of node: AttributeSyntax,
    attachedTo declaration: some DeclGroupSyntax,
    providingExtensionsOf type: some TypeSyntaxProtocol,
    conformingTo protocols: [TypeSyntax],
    in context: some MacroExpansionContext
  ) throws -> [ExtensionDeclSyntax] {
    guard declaration.is(StructDeclSyntax.self) || declaration.isEnum,
      !declaration.inherits("Reducer"), !declaration.inherits("CaseReducer")
    else { return [] }
    let conformance =
      declaration.isEnum ? "Composable.CaseReducer, Composable.Reducer" : "Composable.Reducer"
    return [try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: conformance) {}")]
  }
}

extension ReducerMacro: MemberAttributeMacro {
  public static func expansion(
    of node: AttributeSyntax,
    attachedTo declaration: some DeclGroupSyntax,
    providingAttributesFor member: some DeclSyntaxProtocol,
    in context: some MacroExpansionContext
  ) throws -> [AttributeSyntax] {
    if let nested = member.as(EnumDeclSyntax.self) {
      let wanted: [String] =
        switch nested.name.text {
        case "State": ["CasePathable", "dynamicMemberLookup"]
        case "Action": ["CasePathable"]
        default: []
        }
      return
        wanted
        .filter { !nested.hasAttribute(named: $0) && !nested.inherits($0) }
        .map { AttributeSyntax(attributeName: IdentifierTypeSyntax(name: .identifier($0))) }
    }
    if let property = member.as(VariableDeclSyntax.self), property.identifier?.text == "body",
      !property.isStatic, !property.hasAttribute(named: "ReducerBuilder"),
      let arguments = property.bodyReducerArguments
    {
      return ["@Composable.ReducerBuilder<\(raw: arguments)>"]
    }
    return []
  }
}

extension ReducerMacro: MemberMacro {
  public static func expansion(
    of node: AttributeSyntax,
    providingMembersOf declaration: some DeclGroupSyntax,
    conformingTo protocols: [TypeSyntax],
    in context: some MacroExpansionContext
  ) throws -> [DeclSyntax] {
    if let enumDecl = declaration.as(EnumDeclSyntax.self) {
      return DestinationEnum(enumDecl).members
    }
    guard declaration.is(StructDeclSyntax.self) else {
      context.diagnose(
        Diagnostic(
          node: node,
          message: ComposableDiagnostic(
            "'@Reducer' applies to a struct (a feature) or an enum (its destinations)",
            id: "invalidApplication"
          )
        )
      )
      return []
    }
    let members = declaration.memberBlock.members
    let body = members.lazy.compactMap { $0.decl.as(VariableDeclSyntax.self) }.first {
      $0.identifier?.text == "body" && !$0.isStatic
    }
    let reduceMethod = members.lazy.compactMap { $0.decl.as(FunctionDeclSyntax.self) }.first {
      $0.isReduceIntoAction
    }
    let types = declaration.nestedTypeNames
    if let reduceMethod, let body {
      context.diagnose(
        Diagnostic(
          node: reduceMethod.name,
          message: ComposableDiagnostic(
            """
            A 'reduce' method should not be defined in a reducer with a 'body'; it takes \
            precedence and 'body' will never be invoked
            """,
            id: "bodyAndReduce"
          ),
          notes: [
            Note(node: Syntax(body), message: ComposableNote("'body' defined here"))
          ]
        )
      )
    }
    guard body == nil, reduceMethod == nil else { return [] }
    // Actions that nothing handles are a mistake. Without any, this is what TCA makes of a
    // feature still being written (an `Action` left as `// ...`): missing types and an empty
    // body.
    if let action = members.lazy.compactMap({ $0.decl.as(EnumDeclSyntax.self) })
      .first(where: { $0.name.text == "Action" }),
      action.memberBlock.members.contains(where: { $0.decl.is(EnumCaseDeclSyntax.self) })
    {
      context.diagnose(
        Diagnostic(
          node: declaration.memberBlock.leftBrace,
          message: ComposableDiagnostic(
            """
            '@Reducer' feature has actions but no logic: implement \
            'var body: some ReducerOf<Self>' or 'reduce(into:action:)'
            """,
            id: "missingBody"
          )
        )
      )
      return []
    }
    let access = declaration.accessPrefix
    var generated: [DeclSyntax] = []
    if !types.contains("State") {
      generated.append(
        """
        @ObservableState
        \(raw: access)struct State: Equatable, Hashable, Sendable {
          \(raw: access)init() {}
        }
        """
      )
    }
    if !types.contains("Action") {
      generated.append("\(raw: access)enum Action: Equatable, Hashable, Sendable {}")
    }
    generated.append(
      "\(raw: access)var body: Composable.EmptyReducer<State, Action> { Composable.EmptyReducer() }"
    )
    return generated
  }
}

extension VariableDeclSyntax {
  /// `State, Action` for `body: some Reducer<State, Action>` or `some ReducerOf<Self>`.
  fileprivate var bodyReducerArguments: String? {
    guard
      let constraint = bindings.first?.typeAnnotation?.type.as(SomeOrAnyTypeSyntax.self)?
        .constraint.as(IdentifierTypeSyntax.self),
      let arguments = constraint.genericArgumentClause?.arguments
    else { return nil }
    switch (constraint.name.text, arguments.count) {
    case ("ReducerOf", 1):
      let reducer = arguments.first!.argument.trimmedDescription
      return "\(reducer).State, \(reducer).Action"
    case ("Reducer", 2):
      return arguments.map { $0.argument.trimmedDescription }.joined(separator: ", ")
    default:
      return nil
    }
  }
}

extension FunctionDeclSyntax {
  /// `func reduce(into state: inout State, action: Action) -> Effect<Action>`.
  fileprivate var isReduceIntoAction: Bool {
    let parameters = signature.parameterClause.parameters
    return name.text == "reduce" && parameters.count == 2
      && parameters.first?.firstName.text == "into"
      && parameters.last?.firstName.text == "action"
  }
}

/// The members `@Reducer` derives for an enum of reducers.
private struct DestinationEnum {
  /// One case: `case detail(DetailFeature)` (a reducer) or `case alert(AlertState<Alert>)`
  /// (state with no reducer; its actions are the alert's).
  struct Case {
    let name: String
    let type: TypeSyntax
    let isReducer: Bool
  }

  let declaration: EnumDeclSyntax
  let cases: [Case]

  init(_ declaration: EnumDeclSyntax) {
    self.declaration = declaration
    cases = declaration.memberBlock.members.flatMap { member -> [Case] in
      guard let caseDecl = member.decl.as(EnumCaseDeclSyntax.self) else { return [] }
      return caseDecl.elements.compactMap { element in
        guard let parameters = element.parameterClause?.parameters, parameters.count == 1,
          let type = parameters.first?.type.trimmed
        else { return nil }
        let name = type.as(IdentifierTypeSyntax.self)?.name.text
        return Case(
          name: element.name.text, type: type,
          isReducer: name != "AlertState" && name != "ConfirmationDialogState"
        )
      }
    }
  }

  var members: [DeclSyntax] {
    let access = declaration.accessPrefix
    let types = declaration.nestedTypeNames
    var members: [DeclSyntax] = []
    if !types.contains("State") {
      let stateCases = cases.map {
        "case \($0.name)(\($0.isReducer ? "\($0.type).State" : "\($0.type)"))"
      }
      members.append(
        """
        @CasePathable
        @dynamicMemberLookup
        @ObservableState
        \(raw: access)enum State: Composable.CaseReducerState {
          \(raw: access)typealias StateReducer = \(declaration.name.trimmed)
          \(raw: stateCases.joined(separator: "\n"))
        }
        """
      )
    }
    if !types.contains("Action") {
      let actionCases = cases.map {
        "case \($0.name)(\($0.isReducer ? "\($0.type).Action" : $0.ephemeralAction))"
      }
      members.append(
        """
        @CasePathable
        \(raw: access)enum Action {
          \(raw: actionCases.joined(separator: "\n"))
        }
        """
      )
    }
    let scopes = cases.filter(\.isReducer).map {
      "Composable.Scope(state: \\Self.State.Cases.\($0.name), action: \\Self.Action.Cases.\($0.name)) { \($0.type)() }"
    }
    let body =
      scopes.isEmpty
      ? "Composable.EmptyReducer<Self.State, Self.Action>()" : scopes.joined(separator: "\n")
    members.append(
      """
      @Composable.ReducerBuilder<Self.State, Self.Action>
      \(raw: access)static var body: some Composable.Reducer<Self.State, Self.Action> {
        \(raw: body)
      }
      """
    )
    members += caseScope
    return members
  }

  /// `store.case`: an enum with a case per case, holding a store scoped to the reducer's case
  /// (or the alert's state), and the function that makes it.
  private var caseScope: [DeclSyntax] {
    let access = declaration.accessPrefix
    let scopeCases = cases.map {
      "case \($0.name)(\($0.isReducer ? "Composable.StoreOf<\($0.type)>" : "\($0.type)"))"
    }
    let switchCases = cases.map { scopeCase -> String in
      let name = scopeCase.name
      guard scopeCase.isReducer else { return "case let .\(name)(state): return .\(name)(state)" }
      let store = "store.scope(state: \\State.\(name), action: \\Action.Cases.\(name))!"
      return "case .\(name): return .\(name)(\(store))"
    }
    return [
      """
      \(raw: access)enum CaseScope {
        \(raw: scopeCases.joined(separator: "\n"))
      }
      """,
      """
      @MainActor
      \(raw: access)static func scope(_ store: Composable.Store<Self.State, Self.Action>) -> CaseScope {
        switch store.state {
        \(raw: switchCases.joined(separator: "\n"))
        }
      }
      """,
    ]
  }
}

extension DestinationEnum.Case {
  /// `AlertState<Alert>` sends `Alert`.
  fileprivate var ephemeralAction: String {
    type.as(IdentifierTypeSyntax.self)?.genericArgumentClause?.arguments.first?.argument
      .trimmedDescription ?? "Never"
  }
}
