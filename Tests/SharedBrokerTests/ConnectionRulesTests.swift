import Clocks
import Foundation
import SharedBroker
import SharedBrokerServer
import SharedBrokerTesting
import Testing

/// The rules of protocol 2 that an independent client ran into: `HELLO` first, who is kept
/// alive by what, and the edges of write ids, numbers and values.
@Suite(.timeLimit(.minutes(1)))
struct ConnectionRulesTests {
  func code(_ reply: BrokerMessage?) -> BrokerErrorCode? {
    if case let .error(code, _, _, _) = reply { code } else { nil }
  }

  /// The key and write an `ERROR` names.
  func named(_ reply: BrokerMessage?) -> (String, UInt64)? {
    if case let .error(_, _, key?, write?) = reply { (key, write) } else { nil }
  }

  @Test func everyRequestButPingNeedsHelloAsItsClient() async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let stranger = try RawClient(fixture.endpoint, hello: nil)
    for request: BrokerMessage in [
      .sync(client: "s", key: "k"), .get(client: "s", key: "k"),
      .seed(client: "s", key: "k", origin: "0-old", version: 1, value: Data("1".utf8), writes: [:]),
    ] {
      #expect(code(try stranger.request(request)) == .helloFirst)
    }
    let write = try stranger.request(.write(client: "s", write: 1, key: "k", base: 0, value: Data("1".utf8)))
    #expect(code(write) == .helloFirst)
    #expect(named(write)! == ("k", 1))
    guard case .pong = try stranger.request(.ping()) else {
      Issue.record("PING is answered without HELLO")
      return
    }
    // After HELLO as "a", the connection speaks for "a" only.
    let a = try RawClient(fixture.endpoint, hello: "a")
    let impostor = try a.request(.write(client: "b", write: 1, key: "k", base: 0, value: Data("1".utf8)))
    #expect(code(impostor) == .badRequest)
    #expect(named(impostor)! == ("k", 1))
    #expect(try a.request(.write(client: "a", write: 1, key: "k", base: 0, value: Data("1".utf8))) == .ack(key: "k", write: 1, version: 1))
    #expect(fixture.server?.statistics.withoutHello == 4)
  }

  /// A request the broker cannot take from anybody gets its own error before `HELLO` too: a
  /// client told `hello` would say `HELLO` and send it again, forever.
  @Test func anUnknownCommandBeforeHelloIsUnknownNotHello() async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let stranger = try RawClient(fixture.endpoint, hello: nil)
    for frames in [["NOPE", "s", "k"], ["ACK", "k", "1", "1"]] {
      let reply = try #require(try stranger.request(frames.map { Data($0.utf8) }))
      #expect(code(try BrokerMessage(frames: reply)) == .unknownCommand, "\(frames)")
    }
    #expect(fixture.server?.statistics.withoutHello == 0)
  }

  /// A client is remembered while requests come from the connection that said HELLO as it,
  /// PING included; requests on any other connection do not count for it.
  @Test func onlyTheHelloConnectionKeepsAClientAlive() async throws {
    let clock = TestClock()
    let fixture = try BrokerFixture(clientTimeout: .seconds(60), clock: clock)
    defer { fixture.shutdown() }
    let kept = try RawClient(fixture.endpoint, hello: "kept")
    let dropped = try RawClient(fixture.endpoint, hello: "dropped")
    let bystander = try RawClient(fixture.endpoint, hello: nil)
    for (raw, client) in [(kept, "kept"), (dropped, "dropped")] {
      _ = try raw.request(.write(client: client, write: 1, key: client, base: 0, value: Data("1".utf8)))
    }
    for _ in 0..<4 {
      await clock.advance(by: .seconds(20))
      _ = try kept.request(.ping())
      _ = try bystander.request(.ping())
    }
    let statistics = try #require(fixture.server?.statistics)
    #expect(statistics.forgottenClients == 1)
    #expect(statistics.clients == 1)
    // The forgotten client's connection must say HELLO again.
    #expect(code(try dropped.request(.get(client: "dropped", key: "dropped"))) == .helloFirst)
  }

  @Test(arguments: [
    (["WRITE", "a", "0", "k", "0", "1"], BrokerErrorCode.badRequest),  // write ids start at 1
    (["WRITE", "a", "1", "k", "0", ""], .badRequest),  // an empty value is no value
    (["WRITE", "a", "1", "k", "00", "1"], .badRequest),  // one form per number
    (["WRITE", "a", "1", "k", "0", "1", "x"], .badRequest),
    (["WRITE", "a", "2", "k", "0", "1", "0"], .badRequest),  // after names a write id, from 1
    (["WRITEQ", "a", "2", "k", "0", "1", "0"], .badRequest),
    (["WRITEQ", "a", "2", "k", "0", "1", "1", "x"], .badRequest),
    (["WRITE", "a", "1", "tab\tkey", "0", "1"], .invalidKey),
  ])
  func aRefusedWriteNamesItsKeyAndWrite(fields: [String], expected: BrokerErrorCode) async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let a = try RawClient(fixture.endpoint, hello: "a")
    let reply = try a.request(fields.map { Data($0.utf8) }).map { try BrokerMessage(frames: $0) }
    #expect(code(reply) == expected)
    let (key, write) = try #require(named(reply))
    #expect(key == fields[3])
    #expect(write == UInt64(fields[2])!)
    #expect(fixture.server?.statistics.writesApplied == 0)
  }

  @Test(arguments: [("1", BrokerErrorCode.version), ("3", .version), ("6", .version), ("02", .badRequest), ("two", .badRequest), ("", .badRequest)])
  func helloVersionsAreNumbersInOneForm(version: String, expected: BrokerErrorCode) throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let reply = try exchange(["HELLO", version, "c"].map { Data($0.utf8) }, with: fixture.endpoint)
    let message = try reply.map { try BrokerMessage(frames: $0) }
    #expect(code(message) == expected)
    if expected == .version, case .error(_, let text, _, _)? = message {
      #expect(text.hasSuffix("(this broker speaks 4 and 5)"), "\(text)")
    }
  }

  /// A client of version 4 (which has no `WRITEQ`) is still welcomed, in its own version, as is
  /// one of version 5.
  @Test(arguments: ["4", "5"])
  func eachAcceptedVersionIsWelcomedInItsOwn(version: String) throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let reply = try #require(
      try exchange(["HELLO", version, "c"].map { Data($0.utf8) }, with: fixture.endpoint))
    #expect(reply.first.map { String(decoding: $0, as: UTF8.self) } == "WELCOME")
    #expect(reply.dropFirst().first.map { String(decoding: $0, as: UTF8.self) } == version)
  }

  /// The largest write id is usable once; after it the client id can write that key no more
  /// (PROTOCOL.md: it takes a new client id).
  @Test func theLargestWriteIDIsTheLast() async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let a = try RawClient(fixture.endpoint, hello: "a")
    #expect(try a.request(.write(client: "a", write: .max, key: "k", base: 0, value: Data("1".utf8))) == .ack(key: "k", write: .max, version: 1))
    let next = try a.request(["WRITE", "a", "18446744073709551616", "k", "1", "2"].map { Data($0.utf8) })
    #expect(code(try next.map { try BrokerMessage(frames: $0) }) == .badRequest)
    #expect(try a.request(.write(client: "a", write: .max, key: "k", base: 1, value: Data("2".utf8))) == .reject(key: "k", write: .max, version: 1, lastWrite: .max, value: Data("1".utf8)))
  }

  /// PING lists the versions a client holds; PONG names the keys the broker holds at another
  /// version, so a client whose last updates were dropped learns it at its next heartbeat.
  @Test func pongNamesTheKeysHeldAtAnotherVersion() async throws {
    let fixture = try BrokerFixture()
    defer { fixture.shutdown() }
    let a = try RawClient(fixture.endpoint, hello: "a")
    for (write, key) in [(1, "x"), (2, "y"), (3, "y")] {
      let base: UInt64 = write == 3 ? 1 : 0
      _ = try a.request(.write(client: "a", write: UInt64(write), key: key, base: base, value: Data("1".utf8)))
    }
    let pong = try a.request(
      .ping(versions: [KeyVersion(key: "x", version: 1), KeyVersion(key: "y", version: 1), KeyVersion(key: "z", version: 4)])
    )
    guard case let .pong(_, behind) = pong else {
      Issue.record("expected a PONG, got \(String(describing: pong))")
      return
    }
    #expect(behind == [KeyVersion(key: "y", version: 2), KeyVersion(key: "z", version: 0)])
  }
}
