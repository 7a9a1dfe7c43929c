import Foundation
import Synchronization

/// Writes files at most once per interval per file, and flushes whatever is still pending when
/// the process exits, so a burst of mutations costs one write and the last one is never lost.
final class ThrottledWriter: Sendable {
  static let shared = ThrottledWriter()

  private struct FileState {
    var lastWrite: ContinuousClock.Instant?
    var pending: (Data, @Sendable (Data) throws -> Void, [SaveContinuation])?
    var lastWritten: Data?
  }

  private let files = Mutex<[URL: FileState]>([:])

  private init() {
    atexit { ThrottledWriter.shared.flushAll() }
  }

  /// Writes now, or as soon as the interval since the last write has passed.
  func write(
    _ data: Data, to url: URL, interval: Duration?,
    save: @escaping @Sendable (Data) throws -> Void, continuation: SaveContinuation
  ) {
    let now = ContinuousClock.now
    let delay: Duration? = files.withLock { files in
      var state = files[url] ?? FileState()
      defer { files[url] = state }
      if let interval, let last = state.lastWrite, now - last < interval {
        let waiting = state.pending?.2 ?? []
        let wasScheduled = state.pending != nil
        state.pending = (data, save, waiting + [continuation])
        return wasScheduled ? nil : interval - (now - last)
      }
      state.lastWrite = now
      state.lastWritten = data
      return .zero
    }
    switch delay {
    case .zero?:
      perform(save, data, continuations: [continuation])
    case let delay?:
      let nanoseconds = delay.components.seconds * 1_000_000_000
        + delay.components.attoseconds / 1_000_000_000
      DispatchQueue.global().asyncAfter(
        deadline: .now() + .nanoseconds(Int(nanoseconds))
      ) { self.flush(url) }
    case nil:
      break
    }
  }

  /// Whether `data` is exactly what this process last wrote to `url` (an echo of our own write).
  func wroteLast(_ data: Data, to url: URL) -> Bool {
    files.withLock { $0[url]?.lastWritten == data }
  }

  func flushAll() {
    for url in files.withLock({ Array($0.keys) }) { flush(url) }
  }

  private func flush(_ url: URL) {
    let pending = files.withLock { files -> (Data, @Sendable (Data) throws -> Void, [SaveContinuation])? in
      guard let pending = files[url]?.pending else { return nil }
      files[url]?.pending = nil
      files[url]?.lastWrite = .now
      files[url]?.lastWritten = pending.0
      return pending
    }
    guard let (data, save, continuations) = pending else { return }
    perform(save, data, continuations: continuations)
  }

  private func perform(
    _ save: @Sendable (Data) throws -> Void, _ data: Data, continuations: [SaveContinuation]
  ) {
    do {
      try save(data)
      for continuation in continuations { continuation.resume() }
    } catch {
      for continuation in continuations { continuation.resume(throwing: error) }
    }
  }
}
