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
    var handshakes = HandshakeHistory(usesCurve: curve.serverKey != nil)
    // The answer and the monitor in one wait, so a refused handshake ends the ping at once.
    var poller = Poller()
    let answer = try poller.add(socket)
    let events = try poller.add(monitor.socket)
    let deadline = ContinuousClock.now + .seconds(timeout)
    while case let left = deadline - .now, left > .zero {
      let ready = try poller.poll(timeout: left)
      if ready.contains(events) {
        read(monitor, into: &handshakes)
        if let problem = handshakes.problem, problem.isPermanent {
          fail("no answer from \(endpoint): \(Self.reason(problem))")
        }
      }
      guard ready.contains(answer), let frames = try socket.receive(dontWait: true) else {
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
    read(monitor, into: &handshakes)
    let why =
      if let problem = handshakes.problem {
        ": \(Self.reason(problem))"
      } else if !handshakes.connected {
        ": nothing accepted a connection there"
      } else {
        ""
      }
    fail("no answer from \(endpoint) within \(timeout) s\(why)")
  }

  private func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("broker ping: \(message)\n".utf8))
    Self.exit(withError: ExitCode.failure)
  }

  private func read(_ monitor: SocketMonitor, into handshakes: inout HandshakeHistory) {
    while let event = try? monitor.receive() { handshakes.record(event) }
  }

  /// The problem in words, with the flags that mend it.
  private static func reason(_ problem: HandshakeHistory.Problem) -> String {
    switch problem {
    case .curveRequired, .closed(_, usesCurve: false):
      "\(problem) (give --curve-server-key and --curve-key-file)"
    case .curveNotUsed: "\(problem) (ping it without keys)"
    case .closed(_, usesCurve: true): "\(problem) (is --curve-server-key its public key?)"
    default: "\(problem)"
    }
  }
}
