import ArgumentParser
public import CaseStudies
public import Composable
import CurveCommandLine
import Foundation
import Logging
import ServiceLifecycle
public import SharedBroker
import UnixSignals

/// What makes the counter and the profile programs different; ``run(_:once:)`` does the rest:
/// the broker connection, scripts, the interactive terminal UI and line-by-line output.
@MainActor
public struct Program<R: Reducer & SendableMetatype>
where R.State: Equatable, R.Action: Sendable {
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
  /// The keys whose actions read the shared value (the counter's prime check): ignored until
  /// the broker has sent the value, which they would otherwise answer about the initial one.
  public var valueKeys: Set<Character> = []
  /// The action that dismisses a shown alert, if one is shown.
  public var dismissAlert: (R.State) -> R.Action?
  /// The shown alert's text (the counter's prime answer), printed with the state.
  public var alert: (R.State) -> String?
  /// The mirrored statistics in the state.
  public var shared: (R.State) -> Shared<Stats>
  /// The connection in the state.
  public var connection: (R.State) -> BrokerClient.ConnectionState
  /// The full-screen UI, given the statistics (read once per frame, with their errors), or
  /// `nil` until the broker has sent them: the initial value is no count anyone made.
  public var screen: (R.State, Stats?, ProgramOptions) -> [String]
  /// One line per change, when not interactive (the alert is added to it), given the statistics
  /// (`nil` until the broker has sent them).
  public var line: (R.State, Stats?) -> String

  /// Runs the program to completion.
  ///
  /// - Parameters:
  ///   - options: The shared flags.
  ///   - once: Read the current value, print it and exit (profile `--once`).
  /// - Throws: `ExitCode.failure` after printing why (an unreachable broker, a bad script,
  ///   taps the broker did not confirm).
  public func run(_ options: ProgramOptions, once: Bool = false) async throws {
    let script = try options.script.map {
      do {
        return try Script(parsing: $0, commands: Set(commands.keys))
      } catch {
        throw ValidationError("\(error)")
      }
    }
    var logger = Logger(label: name)
    // The program says itself what went wrong (on the screen, or as its error): the client's
    // own log lines would say it a second time.
    logger.logLevel = .critical
    let client = BrokerClient(
      endpoint: options.broker,
      configuration: BrokerClient.Configuration(curve: try options.curve.credentials()),
      logger: logger
    )
    defer { client.close() }
    prepareDependencies { $0.brokerClient = client }
    let store = Store(initialState: initialState(options.key)) { reducer() }
    let task = store.send(self.task)
    defer { task.cancel() }

    do {
      if once {
        try await reportingRefusal(options.format) {
          try await client.waitUntilConnected(timeout: options.timeoutDuration)
          try checkValue(store.state)
        }
        await showsConnection(store, client)
        emit(render(store.state, shared(store.state).wrappedValue, options.format))
      } else if let script {
        // The script acts on the shared value, so it starts only once the broker sent it, and
        // not on a value it cannot read (its taps would replace what another program wrote).
        try await reportingRefusal(options.format) {
          try await client.waitUntilConnected(timeout: options.timeoutDuration)
          try checkValue(store.state)
        }
        // A signal ends the script early, as `q` ends the interactive program: the taps made
        // so far are still confirmed and the final line printed.
        try await runGracefully(
          UILoop { @MainActor in
            try? await cancelWhenGracefulShutdown { try await runScript(script, store: store) }
          }, logger: logger)
        try await reportingLostTaps(store, client, options.format) {
          try await confirmTaps(client, store: store, timeout: options.timeoutDuration)
        }
        // A publication missed meanwhile (a SUB socket still joining) puts the key back to
        // syncing; the final line waits for the snapshot, so it shows the broker's value.
        try await client.waitUntilConnected(timeout: options.timeoutDuration)
        await showsConnection(store, client)
        emit(render(store.state, shared(store.state).wrappedValue, options.format))
      } else {
        let synced = try await runContinuously(
          store: store, client: client, options: options, logger: logger)
        // An interactive program's screen is gone by now: its stderr says what was lost.
        try await reportingLostTaps(
          store, client, Terminal.isInteractive ? nil : options.format, synced: synced
        ) {
          try await confirmTaps(
            client, store: store, timeout: Self.quitTimeout,
            whileAnswering: options.timeoutDuration, sayingSo: true)
        }
      }
    } catch let error as BrokerError {
      complain("\(name): error: \(error)")
      throw ExitCode.failure
    } catch let error as UnreadableValue {
      complain("\(name): error: \(error.underlying)")
      throw ExitCode.failure
    }
  }

  /// The shared value could not be read (another client wrote something that is not a `Stats`).
  private struct UnreadableValue: Error {
    let underlying: any Error
  }

  /// Waits until the state shows the client's connection: the state learns of it through an
  /// effect, which may not have run yet when a wait on the client itself returns.
  private func showsConnection(_ store: Store<R.State, R.Action>, _ client: BrokerClient) async {
    for await shown in store.values(of: { connection($0) }) where shown == client.connectionState {
      return
    }
  }

  private func checkValue(_ state: R.State) throws {
    if let error = shared(state).loadError { throw UnreadableValue(underlying: error) }
  }

  /// Runs `confirmation`; when it throws (taps are lost), first prints the final line in
  /// `format` with why as its problem: a reader of stdout would otherwise take the last value
  /// printed, or none, for the shared one.
  ///
  /// - Parameter synced: Whether the broker sent the value (else the line shows no figures).
  private func reportingLostTaps(
    _ store: Store<R.State, R.Action>, _ client: BrokerClient,
    _ format: ProgramOptions.PrintFormat?, synced: Bool = true,
    _ confirmation: () async throws -> Void
  ) async throws {
    do {
      try await confirmation()
    } catch let error as BrokerError {
      if let format {
        await showsConnection(store, client)
        let stats = synced ? shared(store.state).wrappedValue : nil
        emit(render(store.state, stats, format, problem: error.message))
      }
      throw error
    }
  }

  /// Runs `body`, the wait for the shared value; with `--print json`, a failure is also printed
  /// as the object's `problem` (stdout), before it ends the program with its error (stderr).
  private func reportingRefusal(
    _ format: ProgramOptions.PrintFormat, _ body: () async throws -> Void
  ) async throws {
    do {
      try await body()
    } catch let error as BrokerError where format == .json {
      emit(Self.json(Printed(stats: nil, alert: nil, problem: error.message)))
      throw error
    } catch let error as UnreadableValue where format == .json {
      emit(Self.json(Printed(stats: nil, alert: nil, problem: "\(error.underlying)")))
      throw error
    }
  }

  /// How long quitting the interactive program waits for the broker to confirm pending taps.
  static var quitTimeout: Duration { .seconds(2) }

  /// Waits until the broker has confirmed every tap; if some are still unconfirmed after
  /// `timeout` (or `whileAnswering`, when the broker answers by then), fails saying how many
  /// are lost. `sayingSo`: first say that it waits, when the broker is not answering (quitting
  /// clears the screen, and a silent pause looks like a hang).
  private func confirmTaps(
    _ client: BrokerClient, store: Store<R.State, R.Action>, timeout: Duration,
    whileAnswering: Duration? = nil, sayingSo: Bool = false
  ) async throws {
    // Refused taps fail a script; quitting the interactive program (`sayingSo`) only says so:
    // they were undone, and quitting loses nothing more.
    func refused() throws {
      guard client.refusedWriteCount > 0 else { return }
      let refusal = refusedTaps(client, store)
      if !sayingSo { throw refusal }
      complain("\(name): \(refusal.message)")
    }
    // Nothing to confirm: no wait, whatever the connection.
    let pending = client.unconfirmedWriteCount
    guard pending > 0 else { return try refused() }
    if sayingSo, ![.connected, .refused].contains(client.connectionState) {
      complain(
        "\(name): waiting up to \(timeout) for the broker to confirm \(Self.taps(pending))")
    }
    var timeout = timeout
    do {
      try await client.waitUntilConfirmed(timeout: timeout)
    } catch let refusal as BrokerError where refusal.code == .refused(.forbidden) {
      // Waiting cannot change it: this client's key may not write the key.
      return try refused()
    } catch {}
    // A broker that answers but holds writes back (for its seed window after a start) confirms
    // them within seconds; one that does not answer is not worth more of the user's wait.
    let waiting = client.unconfirmedWriteCount
    if let whileAnswering, whileAnswering > timeout, waiting > 0,
      [.connected, .syncing].contains(client.connectionState)
    {
      complain(
        "\(name): the broker at \(client.endpoint) answers but has not confirmed \(Self.taps(waiting)) yet; "
          + "waiting up to \(whileAnswering - timeout) more")
      try? await client.waitUntilConfirmed(timeout: whileAnswering - timeout)
      timeout = whileAnswering
    }
    let lost = client.unconfirmedWriteCount
    try refused()
    if waiting > 0, lost == 0 { complain("\(name): the broker confirmed every tap") }
    guard lost > 0 else { return }
    let connection =
      client.handshakeFailureReason ?? shared(store.state).saveError.map { "\($0)" }
      ?? client.connectionState.rawValue
    let (taps, are) = lost == 1 ? ("1 tap was", "is") : ("\(lost) taps were", "are")
    // A refusal that retrying cannot change ends the wait at once, so no time is named.
    if client.connectionState == .refused {
      throw BrokerError(
        .handshakeFailed,
        "\(taps) not confirmed: the broker at \(client.endpoint) refused this client "
          + "(\(connection)) and \(are) lost")
    }
    throw BrokerError(
      .timedOut,
      "\(taps) not confirmed by the broker at \(client.endpoint) within \(timeout) "
        + "(\(connection)) and \(are) lost"
    )
  }

  /// "1 tap", or "2 taps".
  private static func taps(_ count: Int) -> String { count == 1 ? "1 tap" : "\(count) taps" }

  /// The broker refused taps (this client's key may not write the key): how many, and why,
  /// as the error that ends the program.
  private func refusedTaps(_ client: BrokerClient, _ store: Store<R.State, R.Action>)
    -> BrokerError
  {
    let refused = client.refusedWriteCount
    let (taps, were) = (Self.taps(refused), refused == 1 ? "was" : "were")
    let refusal = shared(store.state).saveError as? BrokerError
    let why = refusal.map { ": \($0)" } ?? ""
    return BrokerError(
      .refused(.forbidden), key: refusal?.key,
      "\(taps) \(were) refused by the broker at \(client.endpoint) and undone\(why)")
  }

  /// The text line, or the JSON object, for the statistics (`nil`: not known yet) and what keeps
  /// them from being the shared value.
  private func render(
    _ state: R.State, _ stats: Stats?, _ format: ProgramOptions.PrintFormat,
    problem: String? = nil
  ) -> String {
    switch format {
    case .text:
      [line(state, stats), alert(state), problem].compactMap { $0 }.joined(separator: " · ")
    case .json: Self.json(Printed(stats: stats, alert: alert(state), problem: problem))
    }
  }

  /// `{"count":0,"maxCount":0,"minCount":0,"numberOfCounts":0}`, with `"alert"` while one is
  /// shown and `"problem"` while something keeps the value from being the shared one.
  static func json(_ printed: Printed) -> String {
    let encoder = JSONEncoder()
    // Endpoints and paths in a problem read as typed.
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? encoder.encode(printed)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }

  // MARK: - Modes

  private func runScript(_ script: Script, store: Store<R.State, R.Action>) async throws {
    for step in script.steps {
      switch step {
      case .command(let command):
        if let action = commands[command] { store.send(action) }
      case .wait(let duration):
        try await Task.sleep(for: duration)
      }
    }
  }

  /// Runs the interactive UI, or prints a line per change, until `q` or a signal.
  ///
  /// - Returns: Whether the broker sent the value meanwhile.
  private func runContinuously(
    store: Store<R.State, R.Action>, client: BrokerClient, options: ProgramOptions,
    logger: Logger
  ) async throws -> Bool {
    let interactive = Terminal.isInteractive
    // Whether the broker has sent the value: until then the screen shows none. Kept outside
    // the loop for the final line printed after it.
    let sync = Synced()
    let loop = UILoop { @MainActor in
      // Shown only from inside the group, which traps SIGTERM and SIGINT before it starts its
      // services: once the program shows anything, a signal ends it gracefully.
      let terminal = Terminal()
      let taps = TapWatch()
      defer { taps.cancel() }
      // Trapped before the first draw, so that no resize goes unanswered.
      let resizes = interactive ? await UnixSignalsSequence(trapping: .sigwinch) : nil
      // Each view runs again only when something it read changed: a property of the state,
      // the shared value (from this process or another), or its errors.
      let view: ObserveToken
      if interactive {
        terminal.activate()
        var drawn: [String] = []
        view = observe {
          let state = store.state
          let reading = shared(state).reading
          // The header names the broker in use: with several given, or learned from a cluster,
          // it changes on a move, which changes the state too.
          var shown = options
          shown.broker = client.currentEndpoint
          taps.follow(client)
          if connection(state) == .connected { sync.value = true }
          let lines =
            screen(state, sync.value ? reading.value : nil, shown)
            + (problem(state, reading, client, late: taps.late).map { ["", "  \($0)"] } ?? [])
          guard lines != drawn else { return }
          drawn = lines
          terminal.draw(lines)
        }
      } else {
        var last: String?
        // Nothing until the broker's value arrived (or the broker refused this client, said
        // without a value): a reader of the stream would take the initial value for the shared
        // one.
        view = observe {
          let state = store.state
          if connection(state) == .connected { sync.value = true }
          guard sync.value || connection(state) == .refused else { return }
          let reading = shared(state).reading
          taps.follow(client)
          let shown = render(
            state, sync.value ? reading.value : nil, options.format,
            problem: problem(state, reading, client, late: taps.late))
          guard shown != last else { return }
          last = shown
          emit(shown)
        }
      }
      defer {
        view.cancel()
        terminal.restore()
      }
      guard let resizes else {
        try? await gracefulShutdown()
        return
      }
      let redrawing = Task {
        for await _ in resizes { terminal.redraw() }
      }
      defer { redrawing.cancel() }
      for await byte in terminal.keys().cancelOnGracefulShutdown() {
        let key = Character(UnicodeScalar(byte))
        if let dismiss = dismissAlert(store.state) {
          store.send(dismiss)
        } else if key == "q" {
          return
        } else if let action = keys[key], sync.value || !valueKeys.contains(key) {
          store.send(action)
        }
      }
    }
    try await runGracefully(loop, logger: logger)
    return sync.value
  }

  /// Runs `loop` until it ends or a signal asks the program to end, which the loop sees as a
  /// graceful shutdown; either way the program goes on to confirm its taps.
  private func runGracefully(_ loop: UILoop, logger: Logger) async throws {
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        // `q` ends the loop: that is a graceful end of the program, not a failed service.
        services: [.init(service: loop, successTerminationBehavior: .gracefullyShutdownGroup)],
        // SIGHUP too: a closed terminal window still gets its pending taps to the broker.
        gracefulShutdownSignals: [.sigterm, .sigint, .sighup],
        logger: logger
      )
    )
    try await group.run()
  }

  /// What keeps the shown value from being the shared one, shown with it: the broker refuses
  /// this client (the connection alone would only say `refused`), the broker's value cannot be
  /// read, or it refuses the writes; and taps that wait for the broker.
  ///
  /// - Parameter late: Taps have waited for longer than a round trip (``TapWatch``): while no
  ///   broker answers they are shown at once, otherwise only then.
  private func problem(
    _ state: R.State, _ reading: SharedReading<Stats>, _ client: BrokerClient, late: Bool
  ) -> String? {
    let waiting = client.unconfirmedWriteCount
    let taps = waiting == 0 ? nil : waiting == 1 ? "1 tap waits" : "\(waiting) taps wait"
    if connection(state) == .refused {
      var reason = client.handshakeFailureReason ?? "the broker refused this client"
      let refused = client.refusedWriteCount
      if refused > 0 { reason += " · \(Self.taps(refused)) refused" }
      return taps.map { "\(reason) · \($0), lost if you quit" } ?? reason
    }
    if let error = reading.loadError { return "\(error)" }
    if let error = reading.saveError as? BrokerError, error.code == .refused(.forbidden) {
      return "read-only · \(Self.taps(client.refusedWriteCount)) refused · \(error)"
    }
    if let error = reading.saveError { return "\(error)" }
    let answering = ![.connecting, .disconnected].contains(connection(state))
    guard let taps, late || !answering else { return nil }
    guard answering else {
      return "\(taps) for the broker (kept here; sent when it answers, lost if you quit first)"
    }
    let them = waiting == 1 ? "it" : "them"
    guard client.brokerHoldsWritesBack else {
      // A broker that answers heartbeats but not writes: slow, or frozen until the heartbeats
      // give up on it.
      return "\(taps): the broker answers but has not confirmed \(them) yet"
    }
    return "\(taps): the broker holds writes back while it collects its clients' copies "
      + "after its start (its seed window)"
  }
}

/// What `--print json` prints: the statistics' fields, and the alert's text beside them.
/// The statistics are left out until the broker has sent them.
struct Printed: Encodable {
  let stats: Stats?
  let alert: String?
  var problem: String?

  private enum CodingKeys: CodingKey { case alert, problem }

  func encode(to encoder: any Encoder) throws {
    try stats?.encode(to: encoder)
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encodeIfPresent(alert, forKey: .alert)
    try container.encodeIfPresent(problem, forKey: .problem)
  }
}

/// Whether the broker has sent the value, set by the UI loop and read after it.
@MainActor
private final class Synced {
  var value = false
}

/// The UI loop as a service, so SIGTERM and SIGINT end it gracefully.
private struct UILoop: Service {
  let body: @Sendable () async throws -> Void

  func run() async throws {
    try await body()
  }
}
