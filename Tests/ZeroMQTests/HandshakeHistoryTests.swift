import Testing

@testable import ZeroMQ

@Suite struct HandshakeHistoryTests {
  private func event(_ kind: SocketMonitor.Kind, _ value: UInt32 = 0) -> SocketMonitor.Event {
    SocketMonitor.Event(kind: kind, value: value, endpoint: "tcp://127.0.0.1:5555")
  }

  /// The side that does not notice a mismatch first only sees its connections close.
  @Test func connectionsClosedBeforeTheirHandshakeTellAMismatch() {
    var history = HandshakeHistory(usesCurve: false)
    history.record(event(.connected))
    history.record(event(.disconnected))
    #expect(history.problem == .closed(times: 1, usesCurve: false))
    #expect(history.problem?.isPermanent == false)
    history.record(event(.connected))
    history.record(event(.disconnected))
    history.record(event(.connected))
    history.record(event(.disconnected))
    #expect(history.problem == .closed(times: 3, usesCurve: false))
    #expect(history.problem?.isPermanent == true)
    #expect("\(history.problem!)".contains("requires CURVE"))
    // A client retrying for minutes keeps one problem, so it is told once, not every retry.
    for _ in 0..<100 {
      history.record(event(.connected))
      history.record(event(.disconnected))
    }
    #expect(history.problem == .closed(times: 3, usesCurve: false))
  }

  /// With CURVE, cut handshakes mean a wrong server key or a broker without CURVE.
  @Test func cutCurveHandshakesNameBothCauses() {
    var history = HandshakeHistory(usesCurve: true)
    for _ in 0..<3 { history.record(event(.disconnected)) }
    let words = "\(history.problem!)"
    #expect(words.contains("is not the broker's public key") && words.contains("does not use CURVE"))
  }

  /// A broker that goes away after a handshake is no configuration error.
  @Test func closesAfterASucceededHandshakeDoNotCount() {
    var history = HandshakeHistory(usesCurve: true)
    for _ in 0..<5 {
      history.record(event(.connected))
      history.record(event(.handshakeSucceeded))
      history.record(event(.disconnected))
    }
    #expect(history.problem == nil)
    #expect(history.connected && !history.succeeded)
  }

  /// A stated reason outranks the close libzmq reports after it, and a success clears both.
  @Test func aStatedReasonOutranksTheCloseAndASuccessClearsIt() {
    var history = HandshakeHistory(usesCurve: false)
    history.record(event(.handshakeFailedProtocol, SocketMonitor.mechanismMismatch))
    history.record(event(.handshakeFailedNoDetail, 104))
    history.record(event(.disconnected))
    #expect(history.problem == .curveRequired)
    history.record(event(.handshakeSucceeded))
    #expect(history.problem == nil && history.succeeded)

    var curve = HandshakeHistory(usesCurve: true)
    curve.record(event(.handshakeFailedProtocol, SocketMonitor.mechanismMismatch))
    #expect(curve.problem == .curveNotUsed)
    curve.record(event(.handshakeFailedAuth, 400))
    curve.record(event(.disconnected))
    #expect(curve.problem == .keyRefused(status: 400))
    #expect("\(curve.problem!)".contains("not on the broker's allow-list"))
    curve.record(event(.handshakeFailedProtocol, 7))
    #expect(curve.problem == .protocolError(7))
    #expect(curve.problem?.isPermanent == true)
  }
}
