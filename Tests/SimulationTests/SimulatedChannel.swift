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

  func handle(_ event: KeyEvent) -> KeyOutput {
    machine.handle(event)
  }

  func deliverUpdates() {
    _ = machine.deliver()
  }

  func markStale() {
    machine.markStale()
  }
}
