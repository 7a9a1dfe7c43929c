import Foundation
import Testing
import ZeroMQ

@Suite struct SocketTests {
  @Test func dealerRouterRoundTripWithLargeMultipartMessages() throws {
    let context = try Context()
    defer { context.terminate() }
    let router = try Socket(context: context, type: .router)
    try router.bind("tcp://127.0.0.1:*")
    let endpoint = try router.lastEndpoint
    #expect(endpoint.hasPrefix("tcp://127.0.0.1:") && !endpoint.hasSuffix(":*"))
    let dealer = try Socket(context: context, type: .dealer)
    try dealer.connect(endpoint)

    let big = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0) })
    try dealer.send([Data("hello".utf8), Data(), big])
    let received = try #require(try router.receive())
    #expect(received.count == 4)  // identity + 3 frames
    #expect(received[1] == Data("hello".utf8) && received[2].isEmpty && received[3] == big)
    try router.send([received[0], Data("reply".utf8)])
    #expect(try dealer.receive() == [Data("reply".utf8)])
    router.close()
    dealer.close()
  }

  /// A receive frame by frame sees each frame once, in order, empty ones included, and says
  /// when nothing waits instead of blocking.
  @Test func receiveFrameByFrame() throws {
    let context = try Context()
    defer { context.terminate() }
    let push = try Socket(context: context, type: .push)
    try push.bind("tcp://127.0.0.1:*")
    let pull = try Socket(context: context, type: .pull)
    try pull.connect(try push.lastEndpoint)
    let sent = [Data("key\0".utf8), Data(), Data(repeating: 7, count: 100_000)]
    try push.send(sent)
    try push.send([Data("next".utf8)])
    var frames: [Data] = []
    #expect(try pull.receive { frames.append(Data($0)) })
    #expect(frames == sent)
    frames = []
    #expect(try pull.receive { frames.append(Data($0)) })
    #expect(frames == [Data("next".utf8)])
    frames = []
    #expect(try !pull.receive(dontWait: true) { frames.append(Data($0)) })
    #expect(frames.isEmpty)
  }

  @Test func publishSubscribeWithTopics() throws {
    let context = try Context()
    defer { context.terminate() }
    let publisher = try Socket(context: context, type: .pub)
    try publisher.bind("tcp://127.0.0.1:*")
    let subscriber = try Socket(context: context, type: .sub)
    try subscriber.set(.subscribe, Array("a".utf8))
    try subscriber.set(.receiveTimeout, 20)
    try subscriber.connect(try publisher.lastEndpoint)
    // A subscription takes effect asynchronously: publish until the first one gets through.
    var first: [Data]?
    for _ in 0..<250 where first == nil {
      try publisher.send([Data("b".utf8), Data("ignored".utf8)])
      try publisher.send([Data("a".utf8), Data("hello".utf8)])
      first = try subscriber.receive()
    }
    #expect(first == [Data("a".utf8), Data("hello".utf8)])
  }

  @Test func pollerSeesSocketsAndWakeUps() throws {
    let context = try Context()
    defer { context.terminate() }
    let pull = try Socket(context: context, type: .pull)
    try pull.bind("inproc://poller")
    let push = try Socket(context: context, type: .push)
    try push.connect("inproc://poller")
    let wake = try WakeUpSignal()
    var poller = Poller()
    let socketIndex = try poller.add(pull)
    let wakeIndex = poller.add(fileDescriptor: wake.fileDescriptor)
    #expect(try poller.poll(timeout: .zero).isEmpty)
    wake.signal()
    wake.signal()
    #expect(try poller.poll(timeout: .seconds(5)) == [wakeIndex])
    wake.clear()
    try push.send([Data("x".utf8)])
    #expect(try poller.poll(timeout: .seconds(5)) == [socketIndex])
    #expect(try pull.receive(dontWait: true) == [Data("x".utf8)])
    #expect(try pull.receive(dontWait: true) == nil)
  }

  /// Descriptors alone go through `ppoll`, whose timeout is a `timespec`: fractions of a
  /// millisecond, negative durations and no timeout at all must each come out right.
  @Test func pollerOfDescriptorsOnly() throws {
    let first = try WakeUpSignal()
    let second = try WakeUpSignal()
    var poller = Poller()
    let firstIndex = poller.add(fileDescriptor: first.fileDescriptor)
    let secondIndex = poller.add(fileDescriptor: second.fileDescriptor)
    #expect(try poller.poll(timeout: .zero).isEmpty)
    #expect(try poller.poll(timeout: .microseconds(200)).isEmpty)
    #expect(try poller.poll(timeout: .milliseconds(-5)).isEmpty)
    second.signal()
    #expect(try poller.poll(timeout: nil) == [secondIndex])
    first.signal()
    #expect(try poller.poll(timeout: .microseconds(1_500)) == [firstIndex, secondIndex])
    second.clear()
    #expect(try poller.poll(timeout: .seconds(5)) == [firstIndex])
  }

  @Test func errorsCarryTheirCauseAndClosedSocketsThrow() throws {
    let context = try Context()
    defer { context.terminate() }
    let socket = try Socket(context: context, type: .router)
    #expect {
      try socket.bind("nonsense://x")
    } throws: { error in
      let error = try #require(error as? ZMQError)
      return error.function == "zmq_bind" && error.description.contains("errno")
    }
    socket.close()
    socket.close()
    #expect(throws: ZMQError.self) { try socket.bind("tcp://127.0.0.1:*") }
  }

  @Test func sendWithoutPeerWouldBlock() throws {
    let context = try Context()
    defer { context.terminate() }
    let dealer = try Socket(context: context, type: .dealer)
    #expect(try dealer.send([Data("x".utf8)], dontWait: true) == false)
  }

  @Test func terminatingTheContextUnblocksAReceive() async throws {
    let context = try Context()
    let bound = DispatchSemaphore(value: 0)
    let finished = await withCheckedContinuation { continuation in
      let thread = Thread {
        do {
          let socket = try Socket(context: context, type: .pull)
          defer { socket.close() }
          try socket.bind("inproc://blocked")
          bound.signal()
          _ = try socket.receive()
          continuation.resume(returning: "received")
        } catch let error as ZMQError {
          continuation.resume(returning: error.isContextTerminated ? "terminated" : "\(error)")
        } catch {
          continuation.resume(returning: "\(error)")
        }
      }
      thread.start()
      DispatchQueue.global().async {
        bound.wait()
        context.terminate()
      }
    }
    #expect(finished == "terminated")
  }
}
