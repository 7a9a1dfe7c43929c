import Foundation
import Testing
import TestSupport
import ZeroMQ

/// What the three programs do with flags and values a user may type: a usage error exits 64 with
/// a message, a failure at run time exits 1 with the reason, and nothing crashes.
@Suite(.timeLimit(.minutes(1)))
struct CommandLineTests {
  /// Runs a program to completion.
  func run(_ program: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    try await runCommand(productsDirectory.appendingPathComponent(program).path, arguments, timeout: .seconds(30))
  }

  @Test(arguments: [
    ("counter", ["--timeout", "inf"], "--timeout must be a positive number of seconds"),
    ("counter", ["--timeout", "1e300"], "--timeout must be a positive number of seconds"),
    ("profile", ["--timeout", "-1"], "--timeout must be a positive number of seconds"),
    ("profile", ["--timeout", "nan"], "--timeout must be a positive number of seconds"),
    ("counter", ["--autoplay", "inf"], "--autoplay must be a positive number of seconds"),
    ("counter", ["--autoplay", "-2"], "--autoplay must be a positive number of seconds"),
    ("broker", ["--client-timeout", "1e300"], "--client-timeout must be a positive number"),
    ("broker", ["--max-value-size", "-5"], "--max-value-size must be from 1 to 1073741824"),
    ("broker", ["--max-value-size", "9223372036854775807"], "--max-value-size must be from 1 to 1073741824"),
    ("broker", ["--seed-window", "-1"], "--seed-window must be a number of seconds from 0 to 3600"),
    ("broker", ["--max-queued-updates", "0"], "--max-queued-updates must be from 1 to 2147483647"),
    ("counter", ["--script", "+x99999999999999999999"], "repeat"),
    ("profile", ["--once", "--script", "reset"], "--once and --script do not go together"),
    ("counter", ["--script", "+x2", "--autoplay", "1"], "--autoplay and --script do not go together"),
    ("broker", ["ping", "--timeout", "inf"], "--timeout must be a positive number of seconds"),
    ("broker", ["ping", "nonsense"], "Usage: broker ping"),
    ("broker", ["ping", "nonsense"], "The endpoint must be one such as tcp://127.0.0.1:5555, not \"nonsense\""),
    ("broker", ["--store", "http://127.0.0.1:2379"], "--store (or SHARED_BROKER_STORE) must be etcd://HOST:PORT"),
    ("broker", ["--store", "etcd://127.0.0.1"], "--store (or SHARED_BROKER_STORE) must be etcd://HOST:PORT"),
    ("broker", ["--store", "etcd://a:1,,b:2"], "--store (or SHARED_BROKER_STORE) must be etcd://HOST:PORT"),
    ("broker", ["--store", "etcd://127.0.0.1:2379", "--data", "/tmp/x"], "--store and --data do not go together"),
    ("broker", ["--advertise", "tcp://b:5555"], "--advertise goes with --store"),
    ("broker", ["--store", "etcd://127.0.0.1:2379", "--advertise", "b:5555"], "--advertise (or SHARED_BROKER_ADVERTISE) must be an endpoint"),
    ("counter", ["--broker", "tcp://127.0.0.1:5555,127.0.0.1:6555"], "several separated by commas"),
    ("counter", ["--broker", "tcp://127.0.0.1:5555;tcp://127.0.0.1:6555"], "several separated by commas"),
    ("profile", ["--broker", "tcp://127.0.0.1:notaport,tcp://127.0.0.1:6555"], "several separated by commas"),
    ("web", ["--broker", "tcp://127.0.0.1:5555,127.0.0.1:6555"], "or several separated by commas"),
    ("web", ["--listen", "tcp://127.0.0.1:8080"], "--listen must be HOST:PORT"),
    ("web", ["--allow-origin", "nonsense"], "--allow-origin must be an origin"),
    ("web", ["--allow-origin", "http://localhost:3000/page"], "--allow-origin must be an origin"),
    ("web", ["--broker-metrics", "https://127.0.0.1:9555/metrics"], "--broker-metrics (or SHARED_BROKER_METRICS_URL) must be HOST:PORT"),
    ("counter", ["--curve-server-key", String(repeating: "a", count: 41), "--curve-key-file", "/etc/passwd"], "--curve-key-file \"/etc/passwd\": does not hold a CURVE secret key"),
    ("broker", ["--curve-secret-file", "/nonexistent", "--allow-keys", "/nonexistent"], "Cannot use --curve-secret-file \"/nonexistent\": no such file"),
    ("broker", ["--curve-secret-file", "/etc/passwd", "--allow-keys", "/etc/passwd"], "Cannot use --curve-secret-file \"/etc/passwd\": does not hold a CURVE secret key"),
    ("broker", ["--curve-secret-file", "/tmp/server.pub", "--allow-keys", "/nonexistent"], "Cannot use --curve-secret-file \"/tmp/server.pub\": is a public key file (.pub)"),
    ("counter", ["--curve-server-key", String(repeating: "a", count: 40), "--curve-key-file", "alice.pub"], "Cannot use --curve-key-file \"alice.pub\": is a public key file (.pub): give the secret one (.key) beside it"),
    ("broker", ["ping", "--curve-key-file", "alice.key"], "--curve-server-key and --curve-key-file (or SHARED_BROKER_SERVER_KEY and SHARED_BROKER_KEY_FILE) go together"),
    ("broker", ["keygen", "/nonexistent/dir/key"], "Cannot write into /nonexistent/dir: no such directory"),
    // A key beginning with "-=" or "--=" is the key's value, not a malformed option.
    ("counter", ["--curve-server-key", "-=" + String(repeating: "a", count: 38), "--curve-key-file", "/nonexistent"], "Cannot use --curve-key-file \"/nonexistent\": no such file"),
    ("profile", ["--curve-server-key", "--=" + String(repeating: "a", count: 37), "--curve-key-file", "/nonexistent"], "Cannot use --curve-key-file \"/nonexistent\": no such file"),
  ])
  func badValuesAreUsageErrors(program: String, arguments: [String], message: String) async throws {
    let (status, output) = try await run(program, arguments)
    #expect(status == 64, "\(program) \(arguments): \(output)")
    #expect(output.contains(message), "\(program) \(arguments): \(output)")
  }

  /// `--help` lists the script commands and says the script waits for the shared value and
  /// prints one final line.
  @Test(arguments: ["counter", "profile"])
  func helpListsTheScriptCommands(program: String) async throws {
    let (status, output) = try await run(program, ["--help"])
    #expect(status == 0)
    let help = output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    for text in ["+ and -", "prime", "reset", "wait:MS", "CMDxN", "once the shared value has arrived", "(one line)"] {
      #expect(help.contains(text), "\(text) is missing from: \(help)")
    }
  }

  @Test(arguments: ["broker", "counter", "profile"])
  func versionNamesTheReleaseAndProtocol(program: String) async throws {
    let (status, output) = try await run(program, ["--version"])
    #expect(status == 0)
    #expect(output.hasSuffix("(protocol 5)\n"), "\(output)")
  }

  /// The flags were fine, the system refused: the reason, exit 1, and no usage text.
  @Test func brokerStartFailuresNameTheCause() async throws {
    let (running, router, _) = try await startBroker()
    defer { running.signal(SIGTERM) }

    let listenBusy = try await run("broker", ["--listen", router])
    #expect(listenBusy.status == 1)
    #expect(listenBusy.output.contains("broker: error: cannot bind the listen endpoint \(router)"))

    // Its PUB endpoint is the listen port + 1, which another socket holds.
    let ports = try AdjacentPorts()
    let publishBusy = try await run("broker", ["--listen", "tcp://127.0.0.1:\(ports.free)"])
    #expect(publishBusy.status == 1)
    #expect(
      publishBusy.output.contains(
        "broker: error: cannot bind the PUB endpoint tcp://127.0.0.1:\(ports.free + 1) (the listen port + 1"
      ),
      "\(publishBusy.output)"
    )

    let badData = try await run("broker", ["--listen", "tcp://127.0.0.1:*", "--data", "/proc/forbidden"])
    #expect(badData.status == 1)
    #expect(
      badData.output.contains("broker: error: cannot use the data directory /proc/forbidden: "),
      "\(badData.output)"
    )
    // A file where the directory should be: not Foundation's "File exists".
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("data-\(UUID())")
    try Data().write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let fileData = try await run("broker", ["--listen", "tcp://127.0.0.1:*", "--data", file.path])
    #expect(fileData.status == 1)
    #expect(
      fileData.output.contains(
        "broker: error: cannot use the data directory \(file.path): Not a directory"),
      "\(fileData.output)"
    )
    // No etcd answers there: said at once, with the address.
    let noEtcd = try await run(
      "broker", ["--listen", "tcp://127.0.0.1:*", "--store", "etcd://127.0.0.1:\(try AdjacentPorts().free)"])
    #expect(noEtcd.status == 1)
    #expect(
      noEtcd.output.contains("broker: error: cannot use the cluster's store at etcd://127.0.0.1:"),
      "\(noEtcd.output)")
    #expect(noEtcd.output.contains("etcd unreachable"), "\(noEtcd.output)")
    // An address of another machine (TEST-NET-1 is never this one's).
    let foreign = try await run("broker", ["--listen", "tcp://192.0.2.1:5555"])
    #expect(foreign.status == 1)
    #expect(
      foreign.output.contains("not an address or network interface of this machine"),
      "\(foreign.output)")
    for result in [listenBusy, publishBusy, badData, fileData, noEtcd, foreign] {
      #expect(!result.output.contains("Usage:"))
      #expect(!result.output.contains("NSCocoaErrorDomain"))
    }
  }

  /// A key given through the environment is named as such when it cannot be used.
  @Test func badKeysFromTheEnvironmentNameTheVariable() async throws {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID()).key")
    try CurveKeyPair.generate().secretKey.write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    let cases = [
      (["SHARED_BROKER_SERVER_KEY": String(repeating: "a", count: 40), "SHARED_BROKER_KEY_FILE": "alice.pub"],
       "Cannot use SHARED_BROKER_KEY_FILE \"alice.pub\": is a public key file"),
      (["SHARED_BROKER_SERVER_KEY": "short", "SHARED_BROKER_KEY_FILE": file.path],
       "SHARED_BROKER_SERVER_KEY is not a CURVE public key"),
    ]
    for (environment, message) in cases {
      let program = try await ChildProcess("counter", ["--script", "+"], environment: environment)
      let status = await program.waitForExit()
      #expect(status == 64, "\(program.printed)")
      #expect(program.printed.contains(message), "\(program.printed)")
    }
  }

  /// `broker ping`, the compose health check: 0 while a broker answers, 1 when none does.
  @Test func brokerPingTellsWhetherTheBrokerAnswers() async throws {
    let (broker, router, _) = try await startBroker()
    let answered = try await run("broker", ["ping", router])
    #expect(answered.status == 0, "\(answered.output)")
    #expect(answered.output.hasPrefix("broker at \(router) answered (instance "), "\(answered.output)")
    #expect(!answered.output.contains("behind"))
    broker.signal(SIGTERM)
    #expect(await broker.waitForExit() == 0)
    let silent = try await run("broker", ["ping", router, "--timeout", "0.3"])
    #expect(silent.status == 1)
    #expect(silent.output.contains("no answer from \(router) within 0.3 s: nothing accepted"), "\(silent.output)")
  }
}

/// Two neighbouring loopback ports: `free`, kept for the program under test, and `free + 1`,
/// held by a listening socket. Any pair picked by chance is flaky: outgoing connections take
/// even ports and `bind` hands out odd ones, so the port below a bound one is often taken.
private final class AdjacentPorts {
  let free: Int
  private let sockets: [Int32]

  init() throws {
    for _ in 0..<100 {
      // Bound without listening and with SO_REUSEADDR: no other socket gets the port, but a
      // program that also sets SO_REUSEADDR (libzmq does) may still bind it.
      let kept = try Self.socket(reusingAddress: true, port: 0)
      let port = Self.port(of: kept)
      if port < 65_535, let busy = try? Self.socket(reusingAddress: false, port: port + 1),
        listen(busy, 1) == 0
      {
        (free, sockets) = (port, [kept, busy])
        return
      }
      close(kept)
    }
    throw POSIXError(.EADDRINUSE)
  }

  deinit {
    for socket in sockets { close(socket) }
  }

  private static func socket(reusingAddress: Bool, port: Int) throws -> Int32 {
    let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    var one: Int32 = 1
    if reusingAddress {
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else {
      close(fd)
      throw POSIXError(.EADDRINUSE)
    }
    return fd
  }

  private static func port(of fd: Int32) -> Int {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}
