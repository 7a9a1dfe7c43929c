import Testing

@testable import SharedBrokerServer

/// The verdict on a cluster store's quorum, event by event: questions sent every half second,
/// answers that come late or never, and failures.
@Suite struct ClusterAvailabilityTests {
  let t0 = ContinuousClock.now

  enum Event {
    /// The answer, at `at`, to the question sent at `sent`.
    case answered(sent: Duration, at: Duration)
    case failed(String, at: Duration)
    case tick(at: Duration)
  }

  func run(_ steps: [(Event, ClusterAvailability.Change?)], line: Int = #line) {
    var availability = ClusterAvailability(unavailableAfter: .seconds(3), now: t0)
    for (number, (event, expected)) in steps.enumerated() {
      let change =
        switch event {
        case .answered(let sent, let at): availability.answered(sentAt: t0 + sent, now: t0 + at)
        case .failed(let reason, let at): availability.failed(reason, now: t0 + at)
        case .tick(let at): availability.tick(now: t0 + at)
        }
      #expect(
        change == expected, "step \(number + 1): \(event)",
        sourceLocation: SourceLocation(fileID: #fileID, filePath: #filePath, line: line, column: 1))
    }
  }

  @Test func unansweredQuestionsTurnItUnavailableByTheClock() {
    run([
      (.answered(sent: .zero, at: .milliseconds(2)), nil),
      // Questions at 0.5 s, 1 s, ... stay unanswered; nothing is waited for.
      (.tick(at: .milliseconds(2_999)), nil),
      (.tick(at: .milliseconds(3_000)), .unavailable(reason: nil)),
      (.tick(at: .milliseconds(3_500)), nil),
      // The question sent at 3.5 s is answered at 4 s: available again.
      (.answered(sent: .milliseconds(3_500), at: .seconds(4)), .available),
      (.tick(at: .milliseconds(6_499)), nil),
      // An answer at 9 s to a question sent 5 s before is no sign of a quorum now.
      (.answered(sent: .milliseconds(4_000), at: .seconds(9)), .unavailable(reason: nil)),
    ])
  }

  @Test func aLateAnswerToAnOldQuestionDoesNotRevive() {
    run([
      (.tick(at: .seconds(4)), .unavailable(reason: nil)),
      // Sent at 0.5 s, answered at 4.5 s: etcd answered nothing sent in the last 3 s.
      (.answered(sent: .milliseconds(500), at: .milliseconds(4_500)), nil),
      (.answered(sent: .milliseconds(2_000), at: .milliseconds(4_600)), .available),
      // An older answer arriving after a newer one keeps the newer.
      (.answered(sent: .milliseconds(1_000), at: .milliseconds(4_700)), nil),
      (.tick(at: .milliseconds(4_999)), nil),
      (.tick(at: .seconds(5)), .unavailable(reason: nil)),
    ])
  }

  @Test func failuresNameTheReasonAndDoNotDecideAlone() {
    run([
      // A failure says why, but only the clock turns the verdict.
      (.failed("connection refused", at: .seconds(1)), nil),
      (.failed("no leader", at: .seconds(2)), nil),
      (.tick(at: .seconds(3)), .unavailable(reason: "no leader")),
      (.answered(sent: .seconds(4), at: .milliseconds(4_100)), .available),
      // An answer clears the reason.
      (.tick(at: .milliseconds(7_100)), .unavailable(reason: nil)),
    ])
  }
}
