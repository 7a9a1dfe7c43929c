import ArgumentParser
public import CaseStudies
public import Composable
import Foundation
public import SharedBroker
import ServiceLifecycle
import Logging
import UnixSignals

/// What makes the counter and the profile programs different; ``run(_:once:)`` does the rest:
/// the broker connection, scripts, the interactive terminal UI and line-by-line output.
@MainActor
public struct Program<R: Reducer> where R.State: Equatable, R.Action: Sendable {
  /// The program's name, shown in the UI.
  public var name: String
  /// The root state for a key.
  public var initialState: (_ key: String) -> R.State
  /// The root reducer.
  public var reducer: () -> R
  /// Sent once at start (follows the connection).
  public var task: R.Action
  /// Script commands and the actions they send.
  public var commands: [String: R.Action]
  /// Interactive keys and the actions they send.
  public var keys: [Character: R.Action]
  /// The action that dismisses a shown alert, if one is shown.
  public var dismissAlert: (R.State) -> R.Action?
  /// The statistics in the state.
  public var stats: (R.State) -> Stats
  /// The connection in the state.
  public var connection: (R.State) -> BrokerClient.ConnectionState
  /// The full-screen UI.
  public var screen: (R.State, ProgramOptions) -> [String]
  /// One line per change, when not interactive.
  public var line: (R.State) -> String

  /// Runs the program to completion.
  ///
  /// - Parameters:
  ///   - options: The shared flags.
  ///   - once: Read the current value, print it and exit (profile `--once`).
  /// - Throws: `ExitCode.failure` after printing why (an unreachable broker, a bad script).
  public func run(_ options: ProgramOptions, once: Bool = false) async throws {
    let script = try options.script.map {
      do {
        return try Script(parsing: $0, commands: Set(commands.keys))
      } catch {
        throw ValidationError("\(error)")
      }
    }
    var logger = Logger(label: name)
    logger.logLevel = .error
    let client = BrokerClient(
      endpoint: options.broker,
      configuration: BrokerClient.Configuration(curve: try options.curveCredentials()),
      logger: logger
    )
    defer { client.close() }
    prepareDependencies { $0.brokerClient = client }
    let store = Store(initialState: initialState(options.key)) { reducer() }
    let task = store.send(self.task)
    defer { task.cancel() }

    do {
      if once {
        try await client.waitUntilConnected(timeout: options.timeoutDuration)
        emit(render(store.state, options.format))
      } else if let script {
        try await runScript(script, store: store, client: client, options: options)
      } else {
        try await runContinuously(store: store, client: client, options: options, logger: logger)
      }
    } catch let error as BrokerClientError {
      complain("\(name): error: \(error)")
      throw ExitCode.failure
    }
  }

  private func render(_ state: R.State, _ format: ProgramOptions.PrintFormat) -> String {
    switch format {
    case .text: line(state)
    case .json: Self.json(stats(state))
    }
  }

  /// `{"count":0,"maxCount":0,"minCount":0,"numberOfCounts":0}`.
  static func json(_ stats: Stats) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return (try? encoder.encode(stats)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }

  // MARK: - Modes

  private func runScript(
    _ script: Script, store: Store<R.State, R.Action>, client: BrokerClient, options: ProgramOptions
  ) async throws {
    let printer = store.observe({ render($0, options.format) }) { emit($0) }
    defer { printer.cancel() }
    for step in script.steps {
      switch step {
      case let .command(command):
        if let action = commands[command] { store.send(action) }
      case let .wait(duration):
        try await Task.sleep(for: duration)
      }
    }
    try await client.waitUntilConfirmed(timeout: options.timeoutDuration)
    emit(render(store.state, options.format))
  }

  private func runContinuously(
    store: Store<R.State, R.Action>, client: BrokerClient, options: ProgramOptions,
    logger: Logger
  ) async throws {
    let interactive = Terminal.isInteractive
    let terminal = Terminal()
    let view: StoreObservation
    if interactive {
      terminal.activate()
      view = store.observe({ screen($0, options) }) { terminal.draw($0) }
    } else {
      view = store.observe({ render($0, options.format) }) { emit($0) }
    }
    defer {
      view.cancel()
      terminal.restore()
    }
    let loop = UILoop { @MainActor in
      guard interactive else {
        try? await gracefulShutdown()
        return
      }
      for await byte in terminal.keys().cancelOnGracefulShutdown() {
        let key = Character(UnicodeScalar(byte))
        if let dismiss = dismissAlert(store.state) {
          store.send(dismiss)
        } else if key == "q" {
          return
        } else if let action = keys[key] {
          store.send(action)
        }
      }
    }
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: [.init(service: loop)],
        // SIGHUP too: a closed terminal window still gets its pending taps to the broker.
        gracefulShutdownSignals: [.sigterm, .sigint, .sighup],
        logger: logger
      )
    )
    try await group.run()
    // Give pending writes a moment to reach the broker before leaving.
    try? await client.waitUntilConfirmed(timeout: .seconds(2))
  }
}

/// The UI loop as a service, so SIGTERM and SIGINT end it gracefully.
private struct UILoop: Service {
  let body: @Sendable () async throws -> Void

  func run() async throws {
    try await body()
  }
}
