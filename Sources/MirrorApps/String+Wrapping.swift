extension String {
  /// This line broken into lines of at most `width` terminal columns, so that a terminal does not
  /// wrap it in the middle of a word. It breaks at its widest gaps first (two or more spaces part
  /// the key help's items), then between words; a word wider than a line is cut. Lines after the
  /// first keep this line's indentation.
  ///
  /// ```swift
  /// "  [+] increment   [-] decrement   [q] quit".wrapped(toWidth: 34)
  /// // ["  [+] increment   [-] decrement", "  [q] quit"]
  /// ```
  ///
  /// - Parameter width: The terminal's width in columns.
  /// - Returns: The lines, one when this one fits.
  func wrapped(toWidth width: Int) -> [String] {
    guard Self.columns(self) > width else { return [self] }
    let leading = prefix { $0 == " " }
    // An indentation that would leave little room is dropped rather than kept on every line.
    let indent = leading.count * 2 < width ? String(leading) : ""
    let room = width - indent.count
    var lines: [String] = []
    var line = ""
    func add(_ piece: Substring, after gap: Int) {
      if line.isEmpty {
        line = String(piece)
      } else if Self.columns(line) + gap + Self.columns(piece) <= room {
        line += String(repeating: " ", count: gap) + piece
      } else {
        lines.append(indent + line)
        line = String(piece)
      }
    }
    for (gap, phrase) in Self.pieces(dropFirst(leading.count), parting: 2) {
      guard Self.columns(phrase) > room else {
        add(phrase, after: gap)
        continue
      }
      for (index, (wordGap, word)) in Self.pieces(phrase, parting: 1).enumerated() {
        // The parts of a cut word follow each other with no gap.
        for (part, cut) in Self.cut(word, to: room).enumerated() {
          add(cut, after: part > 0 ? 0 : index == 0 ? gap : wordGap)
        }
      }
    }
    lines.append(indent + line)
    return lines
  }

  /// The parts of `text` between runs of at least `spaces` spaces, each with the width of the
  /// run before it (0 for the first).
  private static func pieces(_ text: Substring, parting spaces: Int)
    -> [(gap: Int, piece: Substring)]
  {
    var pieces: [(gap: Int, piece: Substring)] = []
    var start = text.startIndex
    var gap = 0
    var index = text.startIndex
    while index < text.endIndex {
      guard text[index] == " " else {
        index = text.index(after: index)
        continue
      }
      let run = text[index...].prefix { $0 == " " }
      if run.count >= spaces {
        if start < index { pieces.append((gap, text[start..<index])) }
        gap = run.count
        start = run.endIndex
      }
      index = run.endIndex
    }
    if start < text.endIndex { pieces.append((gap, text[start...])) }
    return pieces
  }

  /// `word` in parts of at most `width` columns.
  private static func cut(_ word: Substring, to width: Int) -> [Substring] {
    var parts: [Substring] = []
    var start = word.startIndex
    var used = 0
    for index in word.indices {
      let wide = columns(word[index...index])
      if used + wide > width, index > start {
        parts.append(word[start..<index])
        (start, used) = (index, 0)
      }
      used += wide
    }
    parts.append(word[start...])
    return parts
  }

  /// How many columns `text` takes on a terminal: two for an emoji, one for anything else (the
  /// programs show nothing wider).
  static func columns(_ text: some StringProtocol) -> Int {
    text.reduce(0) { sum, character in
      sum + (character.unicodeScalars.first?.properties.isEmojiPresentation == true ? 2 : 1)
    }
  }
}
