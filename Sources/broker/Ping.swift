import ArgumentParser
import CurveCommandLine
import Foundation
import SharedBroker
import ZeroMQ

/// `broker ping [ENDPOINT]`: asks a broker whether it answers, as a health check. It sends one
/// `PING` without `HELLO`, so the broker keeps no record of it (unlike a client, which it
/// remembers for `--client-timeout`). A broker with CURVE is asked with a client's keys, as
/// `counter` and `profile` take them.
struct Ping: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract:
      "Exit 0 if the broker answers a PING in time, else 1 (a health check that leaves no client behind)."
  )

  @Argument(help: "The broker's ROUTER endpoint.")
  var endpoint = "tcp://127.0.0.1:5555"

  @Option(parsing: .unconditional, help: "Seconds to wait for the answer.")
  var timeout: Double = 2

  @OptionGroup var curve: CurveClientOptions

  // Checked here, not when connecting: `run()`'s errors come with the top-level usage.
  func validate() throws {
    guard timeout > 0, timeout <= 1_000_000 else {
      throw ValidationError("--timeout must be a positive number of seconds, at most 1000000.")
    }
    guard BrokerClient.isEndpoint(endpoint[...]) else {
      throw ValidationError(
        "The endpoint must be one such as tcp://127.0.0.1:5555, not \"\(endpoint)\".")
    }
  }

  func run() throws {
    let context = try Context()
    defer { context.terminate() }
    let socket = try Socket(context: context, type: .dealer)
    defer { socket.close() }
    // A refused handshake is told only to a monitor: libzmq retries it in silence.
    let monitor = try SocketMonitor(watching: socket, context: context)
    defer { monitor.close() }
    try socket.set(.linger, 0)
    // Short waits, so that a refused handshake ends the ping at once, not at the timeout.
    try socket.set(.receiveTimeout, Int32(min(timeout * 1_000, 50)))
    // Before connecting: libzmq takes a socket's options at `connect`.
    if let curve = try curve.credentials() {
      try socket.setCurveClient(
        serverPublicKey: curve.serverPublicKey, publicKey: curve.publicKey,
        secretKey: curve.secretKey)
    }
    do {
      try socket.connect(endpoint)
    } catch {
      fail("cannot connect to \(endpoint): \(error)")
    }
    _ = try socket.send(BrokerMessage.ping().frames)
    var handshakes = Handshakes(usesCurve: curve.serverKey != nil)
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
      guard let frames = try socket.receive() else {
        handshakes.read(monitor)
        if let refusal = handshakes.refusal { fail("no answer from \(endpoint): \(refusal)") }
        continue
      }
      switch try? BrokerMessage(frames: frames) {
      case .pong(let instance, _)?:
        print("broker at \(endpoint) answered (instance \(instance))")
        return
      case .error(.unavailable, let message, _, _)?:
        // It answers, but cannot serve: unhealthy, and said so at once.
        fail("the broker at \(endpoint) answered but is unavailable: \(message)")
      default:
        continue
      }
    }
    handshakes.read(monitor)
    fail("no answer from \(endpoint) within \(timeout) s\(handshakes.why)")
  }

  private func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("broker ping: \(message)\n".utf8))
    Self.exit(withError: ExitCode.failure)
  }

  /// What the connection's monitor told of its handshakes so far.
  private struct Handshakes {
    let usesCurve: Bool
    var connected = false
    var succeeded = false
    var closed = 0
    /// A reason that retrying does not change.
    var refusal: String?

    mutating func read(_ monitor: SocketMonitor) {
      while let event = try? monitor.receive() {
        switch event.kind {
        case .connected:
          connected = true
        case .handshakeSucceeded:
          succeeded = true
          closed = 0
        case .handshakeFailedAuth:
          refusal = "the broker refused this CURVE key (its public key is not on the allow-list)"
        case .handshakeFailedProtocol where event.value == SocketMonitor.mechanismMismatch:
          refusal = usesCurve ? Self.notCurve : Self.curve
        case .handshakeFailedNoDetail,
          .disconnected where !succeeded:
          // Either side may notice a mismatch first: when the broker does, this side only sees
          // it close. Once can be a cut connection; a broker does it every time to a wrong key.
          closed += 1
          if closed >= 3 { refusal = closedHandshake }
        default:
          continue
        }
      }
    }

    /// Why no answer came, as far as the events tell.
    var why: String {
      if let refusal { return ": \(refusal)" }
      if closed > 0 { return ": \(closedHandshake)" }
      return connected ? "" : ": nothing accepted a connection there"
    }

    private var closedHandshake: String {
      usesCurve
        ? "the broker closed the CURVE handshake (is --curve-server-key its public key?)"
        : "the broker closed the handshake, as one that requires CURVE does \(Self.giveKeys)"
    }

    private static let giveKeys = "(give --curve-server-key and --curve-key-file)"
    private static let curve = "the broker requires CURVE \(giveKeys)"
    private static let notCurve = "the broker does not use CURVE (ping it without keys)"
  }
}
