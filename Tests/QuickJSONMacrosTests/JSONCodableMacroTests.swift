import MacroTesting
import QuickJSONMacros
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import Testing

@Suite(
  .macros([
    "JSONCodable": MacroSpec(
      type: JSONCodableMacro.self,
      conformances: [TypeSyntax(IdentifierTypeSyntax(name: .identifier("JSONCodable")))])
  ])
)
struct JSONCodableMacroTests {
  @Test func membersAreReadAndWrittenInTheOrderOfTheirKeys() {
    assertMacro {
      """
      @JSONCodable
      public struct Stats: Codable {
        var count = 0
        var Zone: String
        var `default`: [Int]?
        let version = 2
        let id: Int
        var a = 1, b = 2
        var doubled: Int { count * 2 }
        var watched = 0 { didSet { print(watched) } }
        static var shared = Stats()
      }
      """
    } expansion: {
      """
      public struct Stats: Codable {
        var count = 0
        var Zone: String
        var `default`: [Int]?
        let version = 2
        let id: Int
        var a = 1, b = 2
        var doubled: Int { count * 2 }
        var watched = 0 { didSet { print(watched) } }
        static var shared = Stats()
      }

      extension Stats: QuickJSON.JSONCodable {
        public init(jsonObject json: QuickJSON.JSONObjectReader) throws {
          self.Zone = try json.decode(\\Self.Zone, forKey: "Zone")
          self.a = try json.decode(\\Self.a, forKey: "a")
          self.b = try json.decode(\\Self.b, forKey: "b")
          self.count = try json.decode(\\Self.count, forKey: "count")
          self.`default` = try json.decode(\\Self.`default`, forKey: "default")
          self.id = try json.decode(\\Self.id, forKey: "id")
          self.watched = try json.decode(\\Self.watched, forKey: "watched")
        }
        public func encode(jsonObject json: inout QuickJSON.JSONObjectWriter) throws {
          try json.encode(self.Zone, forKey: "Zone")
          try json.encode(self.a, forKey: "a")
          try json.encode(self.b, forKey: "b")
          try json.encode(self.count, forKey: "count")
          try json.encode(self.`default`, forKey: "default")
          try json.encode(self.id, forKey: "id")
          try json.encode(self.version, forKey: "version")
          try json.encode(self.watched, forKey: "watched")
        }
      }
      """
    }
  }

  @Test func whatCodableSynthesisDoesNotCopyIsRefused() {
    assertMacro {
      """
      @JSONCodable
      struct Renamed: Codable {
        enum CodingKeys: String, CodingKey { case count = "n" }
        @Clamped var count = 0
        lazy var cache = 0
        init(from decoder: any Decoder) throws {}
      }
      """
    } diagnostics: {
      """
      @JSONCodable
      struct Renamed: Codable {
        enum CodingKeys: String, CodingKey { case count = "n" }
             ┬─────────
             ╰─ 🛑 '@JSONCodable' reads the stored properties; 'CodingKeys' renames them
        @Clamped var count = 0
        ┬───────
        ╰─ 🛑 '@JSONCodable' does not read or write a wrapped property
        lazy var cache = 0
             ┬──
             ╰─ 🛑 '@JSONCodable' does not read or write a lazy property
        init(from decoder: any Decoder) throws {}
        ┬───
        ╰─ 🛑 '@JSONCodable' copies synthesized Codable, not 'init(from:)'
      }
      """
    }
    assertMacro {
      """
      @JSONCodable
      class Box: Codable {}
      """
    } diagnostics: {
      """
      @JSONCodable
      ┬───────────
      ╰─ 🛑 '@JSONCodable' applies to a struct
      class Box: Codable {}
      """
    }
  }
}
