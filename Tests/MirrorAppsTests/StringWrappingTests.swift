import Testing

@testable import MirrorApps

/// Screen lines fitted to a terminal's width: broken between words, never inside one.
@Suite struct StringWrappingTests {
  @Test func aLineThatFitsStaysWhole() {
    #expect("  count  3".wrapped(toWidth: 10) == ["  count  3"])
  }

  @Test func theKeyHelpBreaksBetweenItems() {
    let help = "  [+] increment   [-] decrement   [p] is this prime?   [q] quit"
    #expect(
      help.wrapped(toWidth: 50) == [
        "  [+] increment   [-] decrement", "  [p] is this prime?   [q] quit",
      ])
    #expect(
      help.wrapped(toWidth: 19)
        == ["  [+] increment", "  [-] decrement", "  [p] is this", "  prime?   [q] quit"])
  }

  @Test func theHeaderBreaksBetweenWordsAndALongWordIsCut() {
    let header = #"  SharedMirror · counter · key "stats" · tcp://127.0.0.1:57905 · connected"#
    #expect(
      header.wrapped(toWidth: 50)
        == [#"  SharedMirror · counter · key "stats" ·"#, "  tcp://127.0.0.1:57905 · connected"])
    #expect(
      "  tcp://127.0.0.1:57905".wrapped(toWidth: 12) == ["  tcp://127.", "  0.0.1:5790", "  5"])
  }

  /// An emoji takes two columns.
  @Test func anEmojiCountsTwice() {
    #expect("  👍 The number 3".wrapped(toWidth: 14) == ["  👍 The", "  number 3"])
  }
}
