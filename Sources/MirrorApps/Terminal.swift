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

  /// Clears the screen and draws `lines`.
  func draw(_ lines: [String]) {
    write("\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\r\n") + "\r\n")
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
