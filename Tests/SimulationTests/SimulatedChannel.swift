@testable import SharedBroker

/// A key of a simulated client: the real ``KeyStateMachine``, without the lock and observers a
/// reference adds (the simulation runs on one thread).
final class SimulatedChannel: BrokerChannel, @unchecked Sendable {
  var machine: KeyStateMachine<Tally>

  init(_ machine: KeyStateMachine<Tally>) {
    self.machine = machine
  }

  var key: String { machine.key }
  var hasUnconfirmedWrites: Bool { machine.hasUnconfirmedWrites }
  var unconfirmedWriteCount: Int { machine.unconfirmedWriteCount }
  var isSynced: Bool { machine.isSynced }
  var heldVersion: UInt64? { machine.heldVersion }
  var deadline: ContinuousClock.Instant? { machine.deadline }

  func handle(_ event: KeyEvent) -> KeyOutput {
    let output = machine.handle(event)
    machine.notified()
    return output
  }

  func deliverUpdates() {
    machine.catchUp()
    machine.notified()
  }

  func markStale() {
    machine.markStale()
  }
}
