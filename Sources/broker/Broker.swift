import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SharedBroker
import UnixSignals

/// The SharedMirror broker: keeps the last value of every key and mirrors it to every client.
@main
struct Broker: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "broker",
    abstract: "Mirror @Shared(.broker) values between processes.",
    discussion: """
      Clients connect a DEALER to --listen and a SUB to the next port (see PROTOCOL.md). \
      With --data, every accepted write is logged before it is acknowledged, so a restart \
      (even after SIGKILL) loses no confirmed write.
      """
  )

  @Option(help: "The ROUTER endpoint clients connect to (env SHARED_BROKER_LISTEN).")
  var listen = ProcessInfo.processInfo.environment["SHARED_BROKER_LISTEN"] ?? "tcp://0.0.0.0:5555"

  @Option(help: "The PUB endpoint (default: the listen port + 1).")
  var publish: String?

  @Option(help: "Directory for the write log and snapshot (env SHARED_BROKER_DATA).")
  var data = ProcessInfo.processInfo.environment["SHARED_BROKER_DATA"]

  @Option(help: "The largest value accepted, in bytes.")
  var maxValueSize = 1 << 20

  @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
  var logLevel = "info"

  func validate() throws {
    guard Logger.Level(rawValue: logLevel) != nil else {
      throw ValidationError("Unknown log level \"\(logLevel)\".")
    }
    guard maxValueSize > 0 else { throw ValidationError("--max-value-size must be positive.") }
  }

  func run() async throws {
    let level = Logger.Level(rawValue: logLevel) ?? .info
    LoggingSystem.bootstrap { label in
      var handler = StreamLogHandler.standardOutput(label: label)
      handler.logLevel = level
      return handler
    }
    let logger = Logger(label: "broker")
    let server = BrokerServer(
      configuration: BrokerConfiguration(
        listen: listen, publish: publish,
        dataDirectory: data.map { URL(fileURLWithPath: $0, isDirectory: true) },
        maxValueSize: maxValueSize
      ),
      logger: logger
    )
    do {
      try server.start()
    } catch {
      throw ValidationError("Cannot start the broker on \(listen): \(error)")
    }
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: [.init(service: server)],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
      )
    )
    try await group.run()
  }
}
