import Foundation
import Synchronization
import ZeroMQ

/// A raw writer shaped as an app that hears its answers as they come, as a `.broker` writer
/// does: its DEALER and SUB belong to an I/O thread of their own, which sleeps in a poll on
/// them and on an eventfd. ``send(count:payload:)`` queues the encoded value and wakes that
/// thread (once for any number of values queued before it looks), and the thread takes each
/// answer and each update published back as it arrives, not at the next send as ``RawWriter``
/// does. It is written the way the client's loop is: sockets polled by their descriptors, and
/// drained before each sleep after a send (a send may use up a descriptor's signal).
final class RawIOThreadWriter: @unchecked Sendable {
  private struct Shared {
    var outgoing: [(count: Int, payload: Data)] = []
    var woken = false
    /// The highest count answered, and published back; how many messages were published back.
    var answered = 0
    var published = 0
    var publishedMessages = 0
    /// What ``finish(through:)`` waits for.
    var target: Int?
  }

  private let context: Context
  private let wakeUp: WakeUpSignal
  private let shared = Mutex(Shared())
  private let stopping = StopFlag()
  private let reached = DispatchSemaphore(value: 0)
  private let done = DispatchSemaphore(value: 0)

  init(endpoint: String, publisher: String) throws {
    context = try Context()
    wakeUp = try WakeUpSignal()
    let started = DispatchSemaphore(value: 0)
    let failure = Mutex<(any Error)?>(nil)
    let thread = Thread { [self] in
      defer { done.signal() }
      let sockets = Result { try connect(to: endpoint, publisher: publisher) }
      if case .failure(let error) = sockets { failure.withLock { $0 = error } }
      started.signal()
      guard case .success(let (dealer, subscriber)) = sockets else { return }
      run(dealer: dealer, subscriber: subscriber)
    }
    thread.start()
    started.wait()
    if let error = failure.withLock({ $0 }) {
      context.terminate()
      throw error
    }
  }

  /// The thread's sockets, made on it (a socket belongs to one thread).
  private func connect(to endpoint: String, publisher: String) throws -> (Socket, Socket) {
    let dealer = try Socket(context: context, type: .dealer)
    do {
      try dealer.set(.sendHighWaterMark, 1_000_000)
      try dealer.connect(endpoint)
      let subscriber = try Socket(context: context, type: .sub)
      do {
        try subscriber.set(.receiveHighWaterMark, 1_000_000)
        try subscriber.set(.subscribe, Array("bench".utf8))
        try subscriber.connect(publisher)
        return (dealer, subscriber)
      } catch {
        subscriber.close()
        throw error
      }
    } catch {
      dealer.close()
      throw error
    }
  }

  /// Hands the value to the I/O thread.
  func send(count: Int, payload: Data) {
    let wake = shared.withLock { shared in
      shared.outgoing.append((count, payload))
      defer { shared.woken = true }
      return !shared.woken
    }
    if wake { wakeUp.signal() }
  }

  /// How many messages were published back so far (the warm-up's show the subscription works).
  var publishedMessages: Int { shared.withLock { $0.publishedMessages } }

  /// Waits until the count `target` was both answered and published back.
  func finish(through target: Int) throws {
    let waiting = shared.withLock { shared in
      guard shared.answered < target || shared.published < target else { return false }
      shared.target = target
      return true
    }
    guard waiting, reached.wait(timeout: .now() + 60) == .timedOut else { return }
    let (answered, published) = shared.withLock { ($0.answered, $0.published) }
    throw BenchmarkError(
      "the I/O thread writer's answers stopped at \(answered), its updates at \(published)"
        + " of \(target)")
  }

  func close() {
    stopping.set()
    wakeUp.signal()
    done.wait()
    context.terminate()
  }

  private func run(dealer: Socket, subscriber: Socket) {
    defer {
      dealer.close()
      subscriber.close()
    }
    var poller = Poller()
    guard let dealerFD = try? dealer.get(.fileDescriptor),
      let subscriberFD = try? subscriber.get(.fileDescriptor)
    else { return }
    let dealerIndex = poller.add(fileDescriptor: dealerFD)
    let subscriberIndex = poller.add(fileDescriptor: subscriberFD)
    let wakeIndex = poller.add(fileDescriptor: wakeUp.fileDescriptor)
    var outgoing: [(count: Int, payload: Data)] = []
    var (touched, ready) = (true, ReadyItems())
    while !stopping.isSet {
      if ready.contains(wakeIndex) {
        wakeUp.clear()
        shared.withLock { shared in
          shared.woken = false
          swap(&outgoing, &shared.outgoing)
        }
        for (count, payload) in outgoing {
          _ = try? dealer.send([Data(String(count).utf8), payload], dontWait: true)
        }
        touched = touched || !outgoing.isEmpty
        outgoing.removeAll(keepingCapacity: true)
      }
      var (answered, published, messages) = (0, 0, 0)
      if touched || ready.contains(dealerIndex) {
        while let frames = try? dealer.receive(dontWait: true) {
          let count = frames.first.flatMap { Int(String(decoding: $0, as: UTF8.self)) }
          answered = max(answered, count ?? 0)
        }
      }
      if touched || ready.contains(subscriberIndex) {
        while let frames = try? subscriber.receive(dontWait: true) {
          guard frames.count >= 2 else { continue }
          published = max(published, Int(String(decoding: frames[1], as: UTF8.self)) ?? 0)
          messages += 1
        }
      }
      let finished = shared.withLock { shared in
        shared.answered = max(shared.answered, answered)
        shared.published = max(shared.published, published)
        shared.publishedMessages += messages
        guard let target = shared.target, shared.answered >= target, shared.published >= target
        else { return false }
        shared.target = nil
        return true
      }
      if finished { reached.signal() }
      // Every socket was drained above, so its descriptor's signal is spent: sleep until the next.
      touched = false
      ready = (try? poller.poll(timeout: .milliseconds(100))) ?? []
    }
  }
}
