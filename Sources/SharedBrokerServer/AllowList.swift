internal import ZeroMQ

/// The clients a broker with CURVE admits, by public key, and the keys each may read and write.
///
/// Its file has one client a line: `PUBLIC_KEY [read=PATTERNS] [write=PATTERNS]`, patterns
/// separated by commas, `*` matching any run of characters; a word that starts with `#` starts
/// a comment (a key has `#` at most inside, never first):
///
/// ```text
/// # the counter program: everything
/// rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7
/// # a dashboard: reads the stats keys only
/// Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID read=stats,stats.*
/// # a profile editor: writes (and so reads) its own keys, reads count
/// JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6 read=count write=profile.*
/// ```
///
/// A client with neither field may read and write every key. `write=` grants reading those keys
/// too (a compare-and-set needs the value); `read=` alone is read-only.
public struct AllowList: Sendable, Equatable {
  /// Each admitted client public key (Z85) and what it may do.
  public var entries: [String: KeyPermissions]

  /// A list of these clients.
  public init(_ entries: [String: KeyPermissions] = [:]) {
    self.entries = entries
  }

  /// A list that admits these keys to every key.
  public init(allowing keys: some Sequence<String>) {
    entries = Dictionary(keys.map { ($0, KeyPermissions.all) }, uniquingKeysWith: { first, _ in first })
  }

  /// Reads an allow-list file's text.
  ///
  /// - Throws: ``AllowListError`` naming the first line that is not a key with permissions.
  public init(parsing text: String) throws(AllowListError) {
    entries = [:]
    for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false)
      .enumerated()
    {
      let number = index + 1
      // A word that starts with `#` starts a comment. Z85 has `#`, but never first in a key.
      var words = rawLine.split(whereSeparator: \.isWhitespace)
      if let comment = words.firstIndex(where: { $0.hasPrefix("#") }) {
        words.removeSubrange(comment...)
      }
      guard let key = words.first.map(String.init) else { continue }
      guard (try? CurveKeyPair.decode(key)) != nil else {
        throw AllowListError(
          line: number, reason: "\"\(key)\" is not a CURVE public key (40 Z85 characters)")
      }
      var read: [KeyPattern]?
      var write: [KeyPattern]?
      for word in words.dropFirst() {
        guard let equals = word.firstIndex(of: "=") else {
          throw AllowListError(
            line: number, reason: "\"\(word)\" is not read=PATTERNS or write=PATTERNS")
        }
        let patterns = try Self.patterns(word[word.index(after: equals)...], line: number)
        switch word[..<equals] {
        case "read" where read == nil: read = patterns
        case "write" where write == nil: write = patterns
        case "read", "write":
          throw AllowListError(line: number, reason: "\(word[..<equals])= is given twice")
        default:
          throw AllowListError(
            line: number, reason: "unknown field \"\(word[..<equals])\" (read= or write=)")
        }
      }
      guard entries[key] == nil else {
        throw AllowListError(line: number, reason: "key \(key) is listed twice")
      }
      entries[key] =
        read == nil && write == nil ? .all : KeyPermissions(read: read ?? [], write: write ?? [])
    }
  }

  private static func patterns(_ text: Substring, line: Int) throws(AllowListError)
    -> [KeyPattern]
  {
    let parts = text.split(separator: ",", omittingEmptySubsequences: false)
    guard !parts.contains(where: \.isEmpty) else {
      throw AllowListError(line: line, reason: "an empty pattern in \"\(text)\"")
    }
    return parts.map { KeyPattern(String($0)) }
  }

  /// What changed from `old` to this list.
  public func changes(from old: AllowList) -> AllowListChanges {
    AllowListChanges(
      added: entries.keys.filter { old.entries[$0] == nil }.sorted(),
      removed: old.entries.keys.filter { entries[$0] == nil }.sorted(),
      changed: entries.compactMap { key, permissions in
        old.entries[key].map { $0 == permissions ? nil : key } ?? nil
      }.sorted())
  }
}

/// How one allow-list differs from the one before it, by client public key.
public struct AllowListChanges: Sendable, Equatable {
  /// Keys admitted now that were not before.
  public let added: [String]
  /// Keys no longer admitted.
  public let removed: [String]
  /// Keys admitted before and now, with other permissions.
  public let changed: [String]

  /// Whether the lists admit the same keys with the same permissions.
  public var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }
}

/// Why an allow-list file could not be used.
public struct AllowListError: Error, Equatable, CustomStringConvertible {
  /// The line, from 1.
  public let line: Int
  /// What is wrong with it.
  public let reason: String

  /// `line N: REASON`.
  public var description: String { "line \(line): \(reason)" }
}

/// What one client may do: the keys it may read, and those it may write (and so read too).
public struct KeyPermissions: Sendable, Equatable {
  /// The patterns of the keys it may read; `nil` for every key.
  public let read: [KeyPattern]?
  /// The patterns of the keys it may write; `nil` for every key.
  public let write: [KeyPattern]?

  /// Every key, to read and write.
  public static let all = KeyPermissions(read: nil, write: nil)

  /// Permissions limited to these patterns (`[]`: none).
  public init(read: [KeyPattern]?, write: [KeyPattern]?) {
    self.read = read
    self.write = write
  }

  /// Whether the client may read `key`.
  public func mayRead(_ key: String) -> Bool {
    guard let read else { return true }
    return read.contains { $0.matches(key) } || mayWrite(key)
  }

  /// Whether the client may write `key`.
  public func mayWrite(_ key: String) -> Bool {
    guard let write else { return true }
    return write.contains { $0.matches(key) }
  }
}

extension KeyPermissions: CustomStringConvertible {
  /// As an allow-list line writes them (`read=stats write=profile.*`), or `every key` for a line
  /// with neither field.
  public var description: String {
    // A line with `read=` alone may write nothing; one with `write=` alone reads what it writes.
    let readOnly = write?.isEmpty ?? false
    let read = read?.isEmpty == true && !readOnly ? nil : read
    let fields = [("read", readOnly ? read ?? [KeyPattern("*")] : read), ("write", readOnly ? nil : write)]
      .compactMap { name, patterns in
        patterns.map { "\(name)=\($0.map(\.description).joined(separator: ","))" }
      }
    return fields.isEmpty ? "every key" : fields.joined(separator: " ")
  }
}

extension KeyPermissions {
  /// The topics a subscriber with these permissions gets for its subscription to `prefix`
  /// (ZeroMQ matches topics by prefix): never one that could carry a key it may not read.
  ///
  /// A key's topic is the key and a NUL. A subscription to a readable key's topic, or to the
  /// bare key, is granted that topic alone; the brokers' topic (a control character first, which
  /// no key has) is everyone's. A pattern that is a literal and one final `*` grants the part of
  /// a subscription within it: the subscription itself if it starts with the literal, the
  /// literal if the subscription is shorter; a pattern without `*` grants its key's topic to a
  /// subscription it starts with. Other patterns grant the topics of keys subscribed to by name.
  func topics(granting prefix: [UInt8]) -> [[UInt8]] {
    guard read != nil || write != nil, prefix.first.map({ $0 >= 0x20 }) ?? true else {
      return [prefix]
    }
    var granted: [[UInt8]] = []
    func grant(_ topic: [UInt8]) {
      if !granted.contains(topic) { granted.append(topic) }
    }
    let exact = prefix.last == 0 ? prefix.dropLast() : prefix[...]
    if let key = String(validating: exact, as: UTF8.self), !key.isEmpty, mayRead(key) {
      grant(exact + [0])
    }
    for pattern in (read ?? []) + (write ?? []) {
      if let key = pattern.exactKey, (key + [0]).starts(with: prefix) { grant(key + [0]) }
      guard let literal = pattern.literalPrefix else { continue }
      if literal.starts(with: prefix) {
        grant(literal)
      } else if prefix.starts(with: literal) {
        grant(prefix)
      }
    }
    return granted
  }
}

/// A key pattern of an allow-list: `*` matches any run of characters (none included), every
/// other character itself.
public struct KeyPattern: Sendable, Equatable, CustomStringConvertible {
  /// The pattern as written.
  public let description: String
  /// The literal runs between the stars, as bytes.
  private let parts: [[UInt8]]

  /// A pattern from its text.
  public init(_ text: String) {
    description = text
    parts = text.utf8.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false)
      .map(Array.init)
  }

  /// The key a pattern without `*` matches alone, or `nil`.
  var exactKey: [UInt8]? { parts.count == 1 ? parts[0] : nil }

  /// The literal of a pattern that is a literal and one final `*` (every key that starts with
  /// it matches), or `nil`.
  var literalPrefix: [UInt8]? {
    parts.count == 2 && parts[1].isEmpty ? parts[0] : nil
  }

  /// Whether `key` matches the whole pattern.
  public func matches(_ key: String) -> Bool {
    var key = key
    return key.withUTF8 { matches($0) }
  }

  /// Matches the first part at the start, the last at the end, and the ones between at their
  /// leftmost places: with `*` the only wildcard, the leftmost place never loses a match.
  private func matches(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
    let first = parts[0]
    guard parts.count > 1 else { return key.count == first.count && Self.equal(key, from: 0, first) }
    let last = parts[parts.count - 1]
    guard key.count >= first.count + last.count, Self.equal(key, from: 0, first),
      Self.equal(key, from: key.count - last.count, last)
    else { return false }
    var start = first.count
    let end = key.count - last.count
    for part in parts.dropFirst().dropLast() where !part.isEmpty {
      guard let found = Self.find(part, in: key, from: start, to: end) else { return false }
      start = found + part.count
    }
    return true
  }

  private static func equal(_ key: UnsafeBufferPointer<UInt8>, from start: Int, _ part: [UInt8]) -> Bool {
    guard start + part.count <= key.count else { return false }
    for index in part.indices where key[start + index] != part[index] { return false }
    return true
  }

  private static func find(_ part: [UInt8], in key: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int)
    -> Int?
  {
    var offset = start
    while offset + part.count <= end {
      if equal(key, from: offset, part) { return offset }
      offset += 1
    }
    return nil
  }
}
