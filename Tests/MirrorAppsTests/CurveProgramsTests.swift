import Foundation
import TestSupport
import Testing

/// `broker keygen`, a broker with an allow-list, and programs with and without keys.
@Suite(.timeLimit(.minutes(1)))
struct CurveProgramsTests {
  /// A second `broker keygen` of the same name would lock out every client configured with the
  /// first public key: it refuses unless told `--force`.
  @Test func keygenKeepsAnExistingPair() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "keygen-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let broker = productsDirectory.appendingPathComponent("broker").path
    let prefix = directory.appendingPathComponent("server").path
    #expect(try await runCommand(broker, ["keygen", prefix]).status == 0)
    let first = try String(contentsOfFile: prefix + ".key", encoding: .utf8)

    let again = try await runCommand(broker, ["keygen", prefix])
    #expect(again.status == 64)
    #expect(again.output.contains("server.key already exists"), "\(again.output)")
    #expect(try String(contentsOfFile: prefix + ".key", encoding: .utf8) == first)

    #expect(try await runCommand(broker, ["keygen", prefix, "--force"]).status == 0)
    #expect(try String(contentsOfFile: prefix + ".key", encoding: .utf8) != first)
  }

  /// A key that may only read the programs' key (`stats`): `profile --once` reads it; a
  /// `counter --script` that taps exits 1 at once (not after its timeout), naming the key the
  /// broker refused, its tap undone; a profile of another key is refused at once, naming it.
  @Test func aReadOnlyKeyReadsAndItsTapsAreRefused() async throws {
    let keys = try await CurveKeys(clients: ["writer", "reader"])
    defer { keys.remove() }
    try keys.allow([("writer", ""), ("reader", "read=stats")])
    let (broker, router, _) = try await startBroker(keys.brokerArguments)
    defer { broker.signal(SIGTERM) }
    let credentials = { (name: String) in try keys.credentials(name) }
    let writer = try await ChildProcess(
      "counter", ["--broker", router, "--script", "+x2", "--print", "json"] + credentials("writer"))
    #expect(await writer.waitForExit() == 0, "\(writer.printed)")

    let reader = try await ChildProcess(
      "profile", ["--broker", router, "--once", "--print", "json"] + credentials("reader"))
    #expect(await reader.waitForExit() == 0, "\(reader.printed)")
    #expect(reader.printed.contains(#""count":2"#), "\(reader.printed)")

    let started = ContinuousClock.now
    let tapper = try await ChildProcess(
      "counter",
      ["--broker", router, "--script", "+x1", "--print", "json", "--timeout", "60"]
        + credentials("reader"))
    #expect(await tapper.waitForExit() == 1, "\(tapper.printed)")
    #expect(ContinuousClock.now - started < .seconds(30), "it waited for its timeout")
    #expect(
      tapper.printed.contains("refused") && tapper.printed.contains(#"key "stats" is not writable"#),
      "\(tapper.printed)")
    // The refused tap is undone: the printed figures are the broker's, not the tap's.
    #expect(tapper.printed.contains(#""count":2"#) && !tapper.printed.contains(#""count":3"#), "\(tapper.printed)")

    let stranger = try await ChildProcess(
      "profile",
      ["--broker", router, "--key", "other", "--once", "--print", "json", "--timeout", "60"]
        + credentials("reader"))
    #expect(await stranger.waitForExit() == 1, "\(stranger.printed)")
    #expect(stranger.printed.contains(#"key "other" is not readable"#), "\(stranger.printed)")
    // With --print json, the refusal is the printed object's problem too.
    #expect(stranger.printed.contains(#"{"problem":"The broker refused to read \"other\""#), "\(stranger.printed)")

    // A reader whose read a reload takes away learns of it at its next heartbeat, with no write
    // to reveal it; one whose key a reload removes says so, not `connected` with an old value.
    let watching = try await ChildProcess(
      "profile", ["--broker", router, "--print", "json"] + credentials("reader"))
    defer { watching.signal(SIGTERM) }
    #expect(await watching.waitForOutput(containing: #""count":2"#) != nil, "\(watching.printed)")
    try keys.allow([("writer", ""), ("reader", "read=other")])
    broker.signal(SIGHUP)
    // What changed, with the permissions now in force.
    let narrowed = "changed=[\"\(try keys.publicKey("reader")) read=other\"]"
    #expect(await broker.waitForOutput(containing: narrowed) != nil, "\(broker.printed)")
    #expect(
      await watching.waitForOutput(containing: #"The broker refused to read \"stats\""#) != nil,
      "\(watching.printed)")
    try keys.allow([("writer", "")])
    broker.signal(SIGHUP)
    let removed = "removed=[\"\(try keys.publicKey("reader"))\"]"
    #expect(await broker.waitForOutput(containing: removed) != nil, "\(broker.printed)")
    #expect(
      await watching.waitForOutput(containing: "no longer on the broker's allow-list") != nil,
      "\(watching.printed)")
  }

  @Test func onlyListedClientKeysGetIn() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("curve-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let bin = productsDirectory.path
    let path = { (name: String) in directory.appendingPathComponent(name).path }
    for name in ["server", "client", "stranger"] {
      #expect(try await runCommand("\(bin)/broker", ["keygen", path(name)]).status == 0)
    }
    let serverKey = try String(contentsOfFile: path("server.pub"), encoding: .utf8)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    try FileManager.default.copyItem(atPath: path("client.pub"), toPath: path("allowed.txt"))

    let (broker, router, _) = try await startBroker([
      "--curve-secret-file", path("server.key"), "--allow-keys", path("allowed.txt"),
    ])
    defer { broker.signal(SIGTERM) }
    #expect(await broker.waitForOutput(containing: "curve=on, allow-list of 1") != nil)

    let allowed = try await ChildProcess(
      "counter",
      [
        "--broker", router, "--script", "+x3", "--print", "json",
        "--curve-server-key", serverKey, "--curve-key-file", path("client.key"),
      ])
    #expect(await allowed.waitForExit() == 0)
    #expect(allowed.printed.contains(#""count":3"#))

    let strangerServerKey = try String(contentsOfFile: path("stranger.pub"), encoding: .utf8)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let intruders = [
      (["--curve-server-key", serverKey, "--curve-key-file", path("stranger.key")], "allow-list"),
      ([], "requires CURVE"),
      (
        ["--curve-server-key", strangerServerKey, "--curve-key-file", path("client.key")],
        "is not the broker's public key"
      ),
    ]
    for (extra, reason) in intruders {
      let intruder = try await ChildProcess(
        "profile", ["--broker", router, "--once", "--print", "json", "--timeout", "5"] + extra
      )
      let status = await intruder.waitForExit()
      let printed = intruder.printed
      #expect(status == 1, "\(reason): exit \(status), printed: \(printed)")
      #expect(!printed.contains(#""count":3"#))
      #expect(
        printed.contains("profile: error: cannot connect") && printed.contains(reason),
        "\(reason): printed: \(printed)"
      )
      // Twice: the printed object's problem (stdout, --print json) and the program's error
      // (stderr), not the client's log line too.
      #expect(
        printed.components(separatedBy: "cannot connect").count == 3,
        "\(reason): printed: \(printed)")
      #expect(printed.contains(#"{"problem":"cannot connect"#), "\(reason): printed: \(printed)")
    }
    #expect(broker.printed.contains("Denied a client"))

    // The health check, with the keys a client has, and without: a refused handshake ends it
    // before its timeout.
    let ping = { (timeout: String, extra: [String]) in
      try await runCommand("\(bin)/broker", ["ping", router, "--timeout", timeout] + extra)
    }
    let answered = try await ping(
      "10", ["--curve-server-key", serverKey, "--curve-key-file", path("client.key")])
    #expect(answered.status == 0, "\(answered.output)")
    #expect(answered.output.contains("broker at \(router) answered"), "\(answered.output)")
    let plain = try await ping("30", [])
    #expect(plain.status == 1)
    // Which side notices the mismatch first varies: either way the message says what to do.
    #expect(plain.output.contains("requires CURVE"), "\(plain.output)")
    #expect(
      plain.output.contains("(give --curve-server-key and --curve-key-file)"), "\(plain.output)")
    let stranger = try await ping(
      "30", ["--curve-server-key", serverKey, "--curve-key-file", path("stranger.key")])
    #expect(stranger.status == 1)
    #expect(stranger.output.contains("not on the broker's allow-list"), "\(stranger.output)")
    let otherServer = try await ping(
      "30", ["--curve-server-key", strangerServerKey, "--curve-key-file", path("client.key")])
    #expect(otherServer.status == 1)
    #expect(
      otherServer.output.contains("is --curve-server-key its public key?"), "\(otherServer.output)")
    for refused in [plain, stranger, otherServer] {
      #expect(!refused.output.contains("within 30"), "\(refused.output)")
    }

    // Running, a refused program shows why instead of `connecting` forever.
    let refused = try await ChildProcess(
      "counter",
      [
        "--broker", router, "--curve-server-key", serverKey, "--curve-key-file",
        path("stranger.key"),
      ])
    let shown = await refused.waitForOutput(containing: " · the broker refused")
    #expect(shown?.contains("allow-list") == true, "\(refused.printed)")
    // The broker never sent a count: none is printed, not the initial 0.
    #expect(shown?.hasPrefix("count – · refused · ") == true, "\(refused.printed)")
    refused.signal(SIGTERM)
    let status = await refused.waitForExit()
    #expect(status == 0, "exit \(status), printed: \(refused.printed)")

    // As JSON, the refusal is a field of a valid object with no figures in it.
    let json = try await ChildProcess(
      "profile",
      [
        "--broker", router, "--curve-server-key", serverKey, "--curve-key-file",
        path("stranger.key"), "--print", "json",
      ])
    let line = await json.waitForOutput(containing: "\n")?.split(separator: "\n").first
    json.signal(SIGTERM)
    #expect(await json.waitForExit() == 0)
    let object = try line.flatMap {
      try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]
    }
    #expect(object?.keys.sorted() == ["problem"], "\(json.printed)")
    #expect(object?["problem"]?.contains("allow-list") == true, "\(json.printed)")
  }
}
