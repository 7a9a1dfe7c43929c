import Foundation
import Synchronization
import ZeroMQ

/// The baseline: the same two hops as the broker (DEALER → ROUTER, then PUB → SUB) on raw
/// libzmq sockets, with no protocol, no versions and no JSON handling. With `acknowledges`, it
/// also answers each message, after publishing it, with its count, as the broker ACKs a write.
final class RawForwarder: @unchecked Sendable {
  let router: String
  let publisher: String
  private let context: Context
  private let done = DispatchSemaphore(value: 0)
  private let stopping = StopFlag()

  init(acknowledges: Bool = false) throws {
    context = try Context()
    let endpoints = Mutex<(String, String)?>(nil)
    let bound = DispatchSemaphore(value: 0)
    let context = self.context
    let stopping = self.stopping
    let done = self.done
    let thread = Thread {
      defer { done.signal() }
      guard let router = try? Socket(context: context, type: .router),
        let publisher = try? Socket(context: context, type: .pub),
        (try? publisher.set(.sendHighWaterMark, 1_000_000)) != nil,
        (try? router.bind("tcp://127.0.0.1:*")) != nil,
        (try? publisher.bind("tcp://127.0.0.1:*")) != nil,
        (try? router.set(.receiveTimeout, 100)) != nil
      else {
        bound.signal()
        return
      }
      defer {
        router.close()
        publisher.close()
      }
      endpoints.withLock {
        $0 = ((try? router.lastEndpoint) ?? "", (try? publisher.lastEndpoint) ?? "")
      }
      bound.signal()
      while !stopping.isSet {
        guard let frames = try? router.receive() else { continue }
        _ = try? publisher.send([Data("bench".utf8)] + frames.dropFirst())
        if acknowledges, frames.count >= 2 { _ = try? router.send([frames[0], frames[1]]) }
      }
    }
    thread.start()
    bound.wait()
    guard let (router, publisher) = endpoints.withLock({ $0 }) else {
      throw BenchmarkError("the raw forwarder could not bind")
    }
    self.router = router
    self.publisher = publisher
  }

  func stop() {
    stopping.set()
    done.wait()
    context.terminate()
  }

  /// A forwarder in a process of its own (`broker-benchmarks forwarder`), as the broker is.
  final class Process {
    let child: Child
    let router: String
    let publisher: String

    init(selfPath: String, acknowledges: Bool) throws {
      child = try Child(selfPath, ["forwarder"] + (acknowledges ? ["acknowledging"] : []))
      try child.wait(for: "\n")
      let fields = child.output.split(whereSeparator: \.isWhitespace)
      guard fields.count >= 3, fields[0] == "forwarding" else {
        throw BenchmarkError("the forwarder process did not start: \(child.output)")
      }
      router = String(fields[1])
      publisher = String(fields[2])
    }

    func stop() {
      child.process.terminate()
      _ = child.finish()
    }
  }

  /// The `forwarder [acknowledging]` command: forwards until the harness terminates it.
  static func serve(acknowledges: Bool) throws -> Never {
    // A child inherits the signal mask of the harness thread that started it, which blocks
    // SIGTERM: this thread takes it, with its default action.
    var terminate = sigset_t()
    sigemptyset(&terminate)
    sigaddset(&terminate, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &terminate, nil)
    let forwarder = try RawForwarder(acknowledges: acknowledges)
    FileHandle.standardOutput.write(
      Data("forwarding \(forwarder.router) \(forwarder.publisher)\n".utf8))
    while true { pause() }
  }
}

/// A raw DEALER that feeds the forwarder, and with a `publisher`, a SUB that hears what the
/// forwarder publishes.
final class RawWriter {
  private let context: Context
  private let dealer: Socket
  private let subscriber: Socket?

  init(endpoint: String, publisher: String? = nil) throws {
    let context = try Context()
    self.context = context
    dealer = try Socket(context: context, type: .dealer)
    try dealer.set(.sendHighWaterMark, 1_000_000)
    try dealer.set(.receiveTimeout, 10_000)
    try dealer.connect(endpoint)
    subscriber = try publisher.map { publisher in
      let subscriber = try Socket(context: context, type: .sub)
      try subscriber.set(.receiveHighWaterMark, 1_000_000)
      try subscriber.set(.subscribe, Array("bench".utf8))
      try subscriber.set(.receiveTimeout, 10_000)
      try subscriber.connect(publisher)
      return subscriber
    }
  }

  func send(count: Int, payload: Data) throws {
    try dealer.send([Data(String(count).utf8), payload])
  }

  /// The count of the next acknowledgement of an acknowledging forwarder, if one is waiting
  /// (or arrives within `wait`).
  func acknowledged(wait: Bool) throws -> Int? {
    guard let frames = try dealer.receive(dontWait: !wait) else { return nil }
    return frames.first.flatMap { Int(String(decoding: $0, as: UTF8.self)) }
  }

  /// The count of the next message published back to the writer, if one is waiting (or arrives
  /// within `wait`); `nil` without a subscriber.
  func published(wait: Bool) throws -> Int? {
    guard let frames = try subscriber?.receive(dontWait: !wait), frames.count >= 2 else {
      return nil
    }
    return Int(String(decoding: frames[1], as: UTF8.self))
  }

  func close() {
    dealer.close()
    subscriber?.close()
    context.terminate()
  }
}

/// A flag one thread sets and another polls.
final class StopFlag: Sendable {
  private let flag = Atomic<Bool>(false)
  var isSet: Bool { flag.load(ordering: .relaxed) }
  func set() { flag.store(true, ordering: .relaxed) }
}
