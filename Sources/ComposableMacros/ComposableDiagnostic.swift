import SwiftDiagnostics
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
