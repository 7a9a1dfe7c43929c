internal import AsyncHTTPClient
import Foundation
internal import NIOCore
internal import NIOHTTP1
import Synchronization

/// Receives a streamed answer on the HTTP client's event loop and hands each line of its body to
/// `onLine` there, with no hop to a task per part.
///
/// The request fails with ``Refused`` when the answer's status is not 200, with what `onLine`
/// throws, or with `closed` when the body ends.
final class LineDelegate: HTTPClientResponseDelegate {
  typealias Response = Void

  /// The answer's status was not 200; nothing was handed on.
  struct Refused: Error {
    let status: HTTPResponseStatus
  }

  private struct State {
    var pending = Data()
    var accepted = false
  }
  private let state = Mutex(State())
  private let onLine: @Sendable (Data) throws -> Void
  private let closed: any Error

  init(closed: any Error, onLine: @escaping @Sendable (Data) throws -> Void) {
    self.closed = closed
    self.onLine = onLine
  }

  /// Whether the answer's status was 200: lines may have been handed on.
  var accepted: Bool { state.withLock { $0.accepted } }

  func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<
    Void
  > {
    guard head.status == .ok else {
      return task.eventLoop.makeFailedFuture(Refused(status: head.status))
    }
    state.withLock { $0.accepted = true }
    return task.eventLoop.makeSucceededVoidFuture()
  }

  func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<
    Void
  > {
    let lines = state.withLock { state in
      state.pending.append(contentsOf: buffer.readableBytesView)
      var lines: [Data] = []
      while let newline = state.pending.firstIndex(of: 0x0A) {
        lines.append(state.pending[state.pending.startIndex..<newline])
        state.pending.removeSubrange(state.pending.startIndex...newline)
      }
      return lines
    }
    do {
      for line in lines { try onLine(line) }
      return task.eventLoop.makeSucceededVoidFuture()
    } catch {
      return task.eventLoop.makeFailedFuture(error)
    }
  }

  func didFinishRequest(task: HTTPClient.Task<Void>) throws {
    throw closed
  }
}
