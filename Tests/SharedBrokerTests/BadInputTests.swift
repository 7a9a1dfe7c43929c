import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Sharing
import Testing
import ZeroMQ

@Suite(.timeLimit(.minutes(1)))
struct BadInputTests {
  @Test func brokerAnswersBadRequestsWithErrorsAndCountsThem() async throws {
    try await withBrokerFixture { fixture in
      let honest = fixture.makeClient()
      let count = await inProcess(honest) { Shared(wrappedValue: 0, .broker("count")) }
      try await honest.waitUntilConnected()
      count.withLock { $0 = 1 }
      try await honest.waitUntilConfirmed()

      let cases: [([Data], BrokerErrorCode)] = [
        ([Data("WRITE".utf8), Data("c".utf8)], .badRequest),
        (
          [
            Data("WRITE".utf8), Data("c".utf8), Data("x1".utf8), Data("k".utf8), Data("0".utf8),
            Data(),
          ], .badRequest
        ),
        ([Data("NOPE".utf8)], .unknownCommand),
        ([Data([0xFF, 0xFE])], .badRequest),
        ([Data("GET".utf8), Data("c".utf8), Data()], .invalidKey),
        ([Data("GET".utf8), Data("c".utf8), Data("a\u{0}b".utf8)], .invalidKey),
        (
          [Data("GET".utf8), Data("c".utf8), Data(String(repeating: "k", count: 300).utf8)],
          .invalidKey
        ),
        ([Data("HELLO".utf8), Data("9".utf8), Data("c".utf8)], .version),
      ]
      for (frames, expected) in cases {
        let reply = try #require(try exchange(frames, with: fixture.endpoint))
        guard case .error(let code, _, _, _) = try BrokerMessage(frames: reply) else {
          Issue.record("expected an ERROR for \(frames)")
          continue
        }
        #expect(code == expected)
      }
      let statistics = try #require(fixture.server?.statistics)
      #expect(statistics.rejectedInput == cases.count)
      #expect(count.wrappedValue == 1)
      // Keys with odd (but valid) characters are fine.
      let odd = await inProcess(honest) { Shared(wrappedValue: 0, .broker("ключ/🔑 with spaces")) }
      odd.withLock { $0 = 5 }
      try await honest.waitUntilConfirmed()
      #expect(odd.wrappedValue == 5)
    }
  }

  /// A client that does not check the limit itself (one written in another language) gets the
  /// broker's answer, naming the write.
  @Test func brokerRefusesOversizedValues() async throws {
    let fixture = try BrokerFixture(maxValueSize: 1_000)
    defer { fixture.shutdown() }
    let write = BrokerMessage.write(
      client: "c", write: 1, key: "text", base: 0, value: Data(count: 5_000))
    let reply = try #require(try exchange(write.frames, with: fixture.endpoint))
    guard case .error(let code, _, let key, let writeID) = try BrokerMessage(frames: reply) else {
      Issue.record("expected an ERROR, got \(reply)")
      return
    }
    #expect(code == .tooLarge)
    #expect(key == "text")
    #expect(writeID == 1)
    #expect(fixture.server?.statistics.oversized == 1)
    #expect(fixture.server?.statistics.writesApplied == 0)
  }

  /// The client, told the limit in WELCOME, does not send a bigger value: past the limit + 64 KiB
  /// the broker's libzmq would drop the connection without a reply, and the write would wait for
  /// an answer forever. It reports the error the broker would, keeps the value pending, and its
  /// other keys carry on; the next value that fits replaces it.
  @Test func oversizedValuesAreRefusedBeforeSendingAndStayPending() async throws {
    let fixture = try BrokerFixture(maxValueSize: 1_000)
    defer { fixture.shutdown() }
    let client = fixture.makeClient()
    let text = await inProcess(client) { Shared(wrappedValue: "", .broker("text")) }
    let count = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
    try await client.waitUntilConnected()
    text.withLock { $0 = String(repeating: "x", count: 200_000) }
    let timeout = await #expect(throws: BrokerError.self) {
      try await client.waitUntilConfirmed(keys: ["text"], timeout: .milliseconds(300))
    }
    #expect(timeout?.code == .timedOut)
    let error = try #require(text.saveError as? BrokerError)
    #expect(error.code == .refused(.tooLarge))
    #expect(error.key == "text")
    #expect(error.message.contains("200002 bytes"))
    #expect(text.wrappedValue.count == 200_000)
    #expect(fixture.server?.statistics.oversized == 0)

    count.withLock { $0 += 1 }
    try await client.waitUntilConfirmed(keys: ["count"])
    text.withLock { $0 = "small" }
    try await client.waitUntilConfirmed()
    #expect(text.saveError == nil)
  }

  @Test func messagesOverTheTransportLimitDropOnlyTheirSender() async throws {
    let fixture = try BrokerFixture(maxValueSize: 1_000)
    defer { fixture.shutdown() }
    try await withHonestClientAndRawDealer(fixture) { honest, count, flooder in
      // Far beyond ZMQ_MAXMSGSIZE (value limit + 64 KiB): libzmq drops the sender's connection.
      try flooder.set(.receiveTimeout, 200)
      try flooder.connect(fixture.endpoint)
      let huge = Data(count: 4 << 20)
      try flooder.send(
        BrokerMessage.write(client: "f", write: 1, key: "count", base: 0, value: huge).frames)
      #expect(try flooder.receive() == nil)

      count.withLock { $0 += 1 }
      try await honest.waitUntilConfirmed()
      #expect(count.wrappedValue == 1)
      #expect(fixture.server?.statistics.writesApplied == 1)
    }
  }

  /// The ROUTER takes one message from each connection in turn and queues at most a bounded
  /// number per connection, so a client that floods the broker (and never reads the replies)
  /// slows the others by its fair share only.
  @Test func aFloodFromOneClientDoesNotStarveTheOthers() async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    try await withHonestClientAndRawDealer(fixture) { honest, count, flooder in
      try flooder.set(.sendHighWaterMark, 0)
      try flooder.connect(fixture.endpoint)
      let request = BrokerMessage.get(client: "flooder", key: "count").frames
      for _ in 0..<200_000 { _ = try flooder.send(request, dontWait: true) }

      for _ in 0..<100 { count.withLock { $0 += 1 } }
      try await honest.waitUntilConfirmed()
      let handled = fixture.server?.statistics.requests ?? 0
      print(
        "flood: honest writes confirmed after the broker had handled \(handled) requests of 200,000+"
      )
      #expect(count.wrappedValue == 100)
      #expect(fixture.server?.statistics.writesApplied ?? 0 >= 1)
    }
  }

  /// An honest client sharing `count` through `fixture`, and a raw DEALER (not connected yet,
  /// so the test can set its options first) to misbehave with.
  private func withHonestClientAndRawDealer(
    _ fixture: BrokerFixture,
    _ body: (_ honest: BrokerClient, _ count: Shared<Int>, _ dealer: Socket) async throws -> Void
  ) async throws {
    let honest = fixture.makeClient()
    let count = await inProcess(honest) { Shared(wrappedValue: 0, .broker("count")) }
    try await honest.waitUntilConnected()
    let context = try Context()
    defer { context.terminate() }
    let dealer = try Socket(context: context, type: .dealer)
    defer { dealer.close() }
    try await body(honest, count, dealer)
  }

  @Test func frameCodecRoundTrips() throws {
    let messages: [BrokerMessage] = [
      .hello(client: "c"), .hello(client: "c", version: "4"), .ping(),
      .sync(client: "c", key: "k"), .get(client: "c", key: "k"),
      .write(client: "c", write: 3, key: "k", base: 2, value: Data("{}".utf8)),
      .welcome(instance: "i", publisher: "tcp://127.0.0.1:1"),
      .welcome(instance: "i", publisher: "tcp://127.0.0.1:1", maxValueSize: 1_048_576),
      .welcome(instance: "i", publisher: "tcp://127.0.0.1:1", version: "4"),
      .welcome(
        instance: "i", publisher: "tcp://127.0.0.1:1", maxValueSize: 1_048_576,
        brokers: ["tcp://a:5555", "tcp://b:5555"]),
      .pong(instance: "i"),
      .ping(versions: [KeyVersion(key: "k", version: 3), KeyVersion(key: "l", version: 0)]),
      .pong(instance: "i", behind: [KeyVersion(key: "k", version: 4)]),
      .seed(
        client: "c", key: "k", origin: "0-i", version: 9, value: Data("9".utf8),
        writes: ["a": 1, "b": 2]),
      .snapshot(key: "k", version: 4, lastWrite: 3, value: Data("1".utf8)),
      .ack(key: "k", write: 3, version: 4),
      .reject(key: "k", write: 3, version: 4, lastWrite: 2, value: Data("1".utf8)),
      .error(code: .storage, message: "disk full", key: "k", write: 3),
      .error(code: .badRequest, message: "no", key: nil, write: nil),
    ]
    for message in messages {
      #expect(try BrokerMessage(frames: message.frames) == message)
      #expect(try BrokerMessage(frames: FrameBuffer(message.frames)) == message)
    }
    let update = BrokerMessage.update(key: "k", version: 1, client: "c", write: 1, value: Data())
    #expect(try BrokerMessage(published: update.frames) == update)
    #expect(try BrokerMessage(published: FrameBuffer(update.frames)) == update)
    for brokers in [[], ["tcp://a:5555", "tcp://b:5555"]] {
      #expect(try BrokerMessage(published: BrokerMessage.brokers(brokers).frames) == .brokers(brokers))
    }
    // The brokers' topic carries nothing else, and no key can be it.
    #expect(throws: BrokerProtocolError.self) {
      try BrokerMessage(published: [Data("\u{1}brokers".utf8), Data("UPDATE".utf8)])
    }
    #expect(throws: BrokerProtocolError.self) {
      try BrokerMessage(published: [Data("\u{1}brokers".utf8), Data("BROKERS".utf8), Data([0xFF])])
    }
    #expect(throws: BrokerProtocolError.self) { try BrokerMessage(frames: []) }
    #expect(throws: BrokerProtocolError.self) { try BrokerMessage(published: [Data("k".utf8)]) }
  }

  /// A receive buffer gives back the frames it took, empty ones included, and is reused.
  @Test func frameBufferHoldsFramesBackToBack() {
    let frames = [
      Data("k\0".utf8), Data(), Data("UPDATE".utf8), Data(repeating: 1, count: 70_000),
    ]
    var buffer = FrameBuffer(frames)
    #expect(buffer.count == 4 && buffer.byteCount == 70_008 && buffer.frames == frames)
    buffer.removeAll()
    #expect(buffer.count == 0 && buffer.frames.isEmpty)
    Data("x".utf8).withUnsafeBytes { buffer.append($0) }
    #expect(buffer.frames == [Data("x".utf8)])
  }

  /// Keys keep their rules whichever way they are read: printable ASCII quickly, the rest by
  /// its scalars.
  @Test func keysWithControlCharactersAreRefused() {
    func published(_ key: [UInt8]) -> BrokerMessage? {
      try? BrokerMessage(
        published: FrameBuffer([Data(key + [0]), Data("SYNCED".utf8), Data("c".utf8)]))
    }
    #expect(published(Array("stats ~".utf8)) == .synced(key: "stats ~", client: "c"))
    #expect(published(Array("ключ".utf8)) == .synced(key: "ключ", client: "c"))
    let refused: [[UInt8]] = [
      [], [0x41, 0x09], [0x7F], [0x41, 0xC2, 0x85], [0xFF], Array(repeating: 0x41, count: 257),
    ]
    for refused in refused {
      #expect(published(refused) == nil, "\(refused)")
    }
  }
}
