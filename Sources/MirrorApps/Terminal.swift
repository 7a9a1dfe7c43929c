import Foundation
#if canImport(Glibc)
  import Glibc
#endif

/// The terminal the interactive UI draws on: alternate screen, hidden cursor, keys delivered one
/// at a time without echo. ``restore()`` puts everything back (also on Ctrl-C and SIGTERM, which
/// stay signals and end the program gracefully).
final class Terminal: @unchecked Sendable {
  private var original = termios()
  private var isActive = false
  /// The lines last drawn, as given, to fit again to a new width.
  private var lines: [String] = []

  /// Whether stdin and stdout are both a terminal.
  static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

  func activate() {
    guard !isActive, tcgetattr(STDIN_FILENO, &original) == 0 else { return }
    var raw = original
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    tcsetattr(STDIN_FILENO, TCSANOW, &raw)
    write("\u{1B}[?1049h\u{1B}[?25l")
    isActive = true
  }

  func restore() {
    guard isActive else { return }
    isActive = false
    write("\u{1B}[?25h\u{1B}[?1049l")
    tcsetattr(STDIN_FILENO, TCSANOW, &original)
  }

  /// The terminal's width in columns (80 when it does not say).
  var columns: Int {
    var size = winsize()
    guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
    return Int(size.ws_col)
  }

  /// Clears the screen and draws `lines`, each broken between words to fit the terminal's width
  /// (the terminal would break it anywhere).
  func draw(_ lines: [String]) {
    self.lines = lines
    let width = columns
    let fitted = lines.flatMap { $0.wrapped(toWidth: width) }
    write("\u{1B}[H\u{1B}[2J" + fitted.joined(separator: "\r\n") + "\r\n")
  }

  /// Draws the last lines again, fitted to the terminal's width now (after a resize).
  func redraw() {
    draw(lines)
  }

  /// Keys typed, one byte each, read on a thread of their own.
  func keys() -> AsyncStream<UInt8> {
    AsyncStream { continuation in
      let thread = Thread {
        var byte: UInt8 = 0
        while read(STDIN_FILENO, &byte, 1) == 1 { continuation.yield(byte) }
        continuation.finish()
      }
      thread.name = "SharedMirror.Keyboard"
      thread.start()
    }
  }

  private func write(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
  }
}

/// Writes a line to stdout at once (no buffering), so pipes and logs see it immediately.
func emit(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Writes a line to stderr.
func complain(_ line: String) {
  FileHandle.standardError.write(Data((line + "\n").utf8))
}
