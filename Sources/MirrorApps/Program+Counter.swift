import CaseStudies
import Composable
import SharedBroker

extension Program where R == CounterApp {
  /// The counter program: + and − change the mirrored count, p checks for a prime.
  ///
  /// - Parameter autoplay: Taps + this often, when set.
  /// - Returns: The program.
  public static func counter(autoplay: Duration? = nil) -> Self {
    Program(
      name: "counter",
      initialState: { CounterApp.State(key: $0) },
      reducer: { CounterApp(autoplay: autoplay) },
      task: .task,
      commands: [
        "+": .counter(.incrementButtonTapped),
        "-": .counter(.decrementButtonTapped),
        "prime": .counter(.isPrimeButtonTapped),
      ],
      keys: [
        "+": .counter(.incrementButtonTapped),
        "=": .counter(.incrementButtonTapped),
        "-": .counter(.decrementButtonTapped),
        "p": .counter(.isPrimeButtonTapped),
      ],
      valueKeys: ["p"],
      dismissAlert: { $0.counter.alert == nil ? nil : .counter(.alert(.dismiss)) },
      alert: { $0.counter.alert.map { String(state: $0.title) } },
      shared: { $0.$stats },
      connection: { $0.connection },
      screen: { state, stats, options in
        var lines = [
          header("counter", options: options, connection: state.connection),
          "",
          "    count  \(figure(stats?.count))",
          "",
          "  [+] increment   [-] decrement   [p] is this prime?"
            + (stats == nil ? " (once the count is known)" : "") + "   [q] quit",
        ]
        if let alert = state.counter.alert {
          lines += ["", "  \(alert.title)", "  (press any key)"]
        }
        return lines
      },
      line: { state, stats in "count \(figure(stats?.count)) · \(state.connection.rawValue)" }
    )
  }
}

/// A figure of the statistics, or `–` while the broker has not sent them.
func figure(_ value: Int?) -> String {
  value.map { "\($0)" } ?? "–"
}

/// The first line of both programs' screens.
func header(_ name: String, options: ProgramOptions, connection: BrokerClient.ConnectionState) -> String {
  "  SharedMirror · \(name) · key \"\(options.key)\" · \(options.broker) · \(connection.rawValue)"
}
