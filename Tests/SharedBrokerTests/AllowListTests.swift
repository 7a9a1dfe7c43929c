import Foundation
@testable import SharedBrokerServer
import Testing
import ZeroMQ

struct AllowListTests {
  let keys = (0..<3).map { _ in try! CurveKeyPair.generate().publicKey }

  @Test func linesGiveEachKeyItsPermissions() throws {
    let list = try AllowList(
      parsing: """
        # a comment
        \(keys[0])
          \(keys[1]) read=stats,stats.*   # a dashboard

        \(keys[2]) read=count write=profile.*,user.*.name
        """)
    #expect(list.entries.count == 3)
    #expect(list.entries[keys[0]] == .all)
    let dashboard = try #require(list.entries[keys[1]])
    #expect(dashboard.mayRead("stats") && dashboard.mayRead("stats.a") && dashboard.mayRead("stats."))
    #expect(!dashboard.mayRead("statsx") && !dashboard.mayWrite("stats"))
    let editor = try #require(list.entries[keys[2]])
    #expect(editor.mayRead("count") && !editor.mayWrite("count"))
    #expect(editor.mayWrite("profile.name") && editor.mayRead("profile.name"))
    #expect(editor.mayWrite("user.42.name") && editor.mayWrite("user..name"))
    #expect(!editor.mayWrite("user.42.names") && !editor.mayRead("counter"))
  }

  /// Z85 has `#`, never first in a key: only a word that starts with it is a comment.
  @Test func aHashInsideAKeyIsPartOfIt() throws {
    let key = try #require(
      (0..<10_000).lazy.map { _ in try! CurveKeyPair.generate().publicKey }.first { $0.contains("#") })
    let list = try AllowList(parsing: "\(key) read=a #b\n#\(keys[1])")
    #expect(list.entries == [key: KeyPermissions(read: [KeyPattern("a")], write: [])])
  }

  @Test(arguments: [
    ("nonsense", 1, "not a CURVE public key"),
    ("KEY read", 1, "is not read=PATTERNS"),
    ("KEY read=a read=b", 1, "given twice"),
    ("KEY owner=a", 1, "unknown field \"owner\""),
    ("KEY read=a,,b", 1, "an empty pattern"),
    ("#\nKEY\nKEY write=x", 3, "listed twice"),
  ])
  func malformedLinesAreNamed(text: String, line: Int, reason: String) {
    let error = #expect(throws: AllowListError.self) {
      try AllowList(parsing: text.replacingOccurrences(of: "KEY", with: keys[0]))
    }
    #expect(error?.line == line)
    #expect(error?.reason.contains(reason) == true, "\(String(describing: error))")
  }

  @Test func patternsMatchWholeKeys() {
    let cases: [(String, String, Bool)] = [
      ("count", "count", true), ("count", "count2", false), ("count", "coun", false),
      ("*", "", true), ("*", "anything", true), ("a*", "a", true), ("a*", "ba", false),
      ("*a", "ba", true), ("*a", "ab", false), ("a*b*c", "abc", true), ("a*b*c", "axxbyyc", true),
      ("a*b*c", "acb", false), ("a*a", "a", false), ("a*a", "aa", true), ("ü*", "über", true),
    ]
    for (pattern, key, expected) in cases {
      #expect(KeyPattern(pattern).matches(key) == expected, "\(pattern) ~ \(key)")
    }
  }

  /// A subscription is granted only topics its key may read: a key's topic is the key and NUL.
  @Test func subscriptionsAreGrantedWhatTheKeyMayRead() {
    func topics(_ permissions: KeyPermissions, _ prefix: String) -> Set<String> {
      Set(permissions.topics(granting: Array(prefix.utf8)).map { String(decoding: $0, as: UTF8.self) })
    }
    let limited = KeyPermissions(
      read: [KeyPattern("count"), KeyPattern("stats.*")], write: [KeyPattern("user.*.name")])
    #expect(topics(.all, "") == [""])
    #expect(topics(.all, "co") == ["co"])
    #expect(topics(limited, "") == ["count\0", "stats."])
    #expect(topics(limited, "count") == ["count\0"])
    #expect(topics(limited, "count\0") == ["count\0"])
    #expect(topics(limited, "counter") == [])
    #expect(topics(limited, "st") == ["stats."])
    #expect(topics(limited, "stats.a") == ["stats.a\0", "stats.a"])
    #expect(topics(limited, "user.1.name") == ["user.1.name\0"])
    #expect(topics(limited, "user.") == [])
    #expect(topics(limited, "\u{1}brokers") == ["\u{1}brokers"])
    #expect(topics(KeyPermissions(read: [], write: []), "") == [])
  }

  @Test func changesNameTheKeys() throws {
    let old = AllowList([keys[0]: .all, keys[1]: .all])
    let new = AllowList([keys[1]: KeyPermissions(read: [KeyPattern("a")], write: []), keys[2]: .all])
    let changes = new.changes(from: old)
    #expect(changes.added == [keys[2]] && changes.removed == [keys[0]] && changes.changed == [keys[1]])
    #expect(old.changes(from: old).isEmpty)
  }

  /// Permissions read as the allow-list line that gives them, for the reload's log.
  @Test func permissionsReadAsTheirLine() throws {
    let line = "read=stats,user.* write=profile.*"
    let list = try AllowList(parsing: "\(keys[0]) \(line)\n\(keys[1])\n\(keys[2]) read=a")
    #expect(list.entries[keys[0]]?.description == line)
    #expect(list.entries[keys[1]]?.description == "every key")
    #expect(list.entries[keys[2]]?.description == "read=a")
    #expect(try AllowList(parsing: "\(keys[0]) write=b").entries[keys[0]]?.description == "write=b")
  }
}
