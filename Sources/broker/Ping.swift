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
    abstract: "Exit 0 if the broker answers a PING in time, else 1 (a health check that leaves no client behind)."
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
    try socket.set(.linger, 0)
    try socket.set(.receiveTimeout, Int32(timeout * 1_000))
    // Before connecting: libzmq takes a socket's options at `connect`.
    if let curve = try curve.credentials() {
      try socket.setCurveClient(
        serverPublicKey: curve.serverPublicKey, publicKey: curve.publicKey,
        secretKey: curve.secretKey)
    }
    do {
      try socket.connect(endpoint)
    } catch {
      FileHandle.standardError.write(
        Data("broker ping: cannot connect to \(endpoint): \(error)\n".utf8))
      throw ExitCode.failure
    }
    _ = try socket.send(BrokerMessage.ping().frames)
    while let frames = try socket.receive() {
      switch try? BrokerMessage(frames: frames) {
      case let .pong(instance, _)?:
        print("broker at \(endpoint) answered (instance \(instance))")
        return
      case let .error(.unavailable, message, _, _)?:
        // It answers, but cannot serve: unhealthy, and said so at once.
        FileHandle.standardError.write(
          Data("broker ping: the broker at \(endpoint) answered but is unavailable: \(message)\n".utf8))
        throw ExitCode.failure
      default:
        continue
      }
    }
    // A CURVE broker drops a handshake it cannot accept without a word.
    let hint =
      curve.serverKey == nil
      ? " (a broker with CURVE answers only a ping given --curve-server-key and --curve-key-file)"
      : " (or it refused this key: is it on the broker's allow-list?)"
    FileHandle.standardError.write(
      Data("broker ping: no answer from \(endpoint) within \(timeout) s\(hint)\n".utf8)
    )
    throw ExitCode.failure
  }
}
