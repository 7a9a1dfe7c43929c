import CaseStudies
import Composable
import SharedBroker

extension Program where R == ProfileApp {
  /// The profile program: shows the mirrored statistics; r resets them everywhere.
  public static var profile: Self {
    Program(
      name: "profile",
      initialState: { ProfileApp.State(key: $0) },
      reducer: { ProfileApp() },
      task: .task,
      commands: ["reset": .profile(.resetCounterButtonTapped)],
      keys: ["r": .profile(.resetCounterButtonTapped)],
      dismissAlert: { _ in nil },
      alert: { _ in nil },
      shared: { $0.profile.$stats },
      connection: { $0.connection },
      screen: { state, stats, options in
        [
          header("profile", options: options, connection: state.connection),
          "",
          "    current  \(figure(stats?.count))",
          "    max      \(figure(stats?.maxCount))",
          "    min      \(figure(stats?.minCount))",
          "    taps     \(figure(stats?.numberOfCounts))",
          "",
          "  [r] reset   [q] quit",
        ]
      },
      line: { state, stats in
        "current \(figure(stats?.count)) · max \(figure(stats?.maxCount)) · "
          + "min \(figure(stats?.minCount)) · taps \(figure(stats?.numberOfCounts)) · "
          + state.connection.rawValue
      }
    )
  }
}
