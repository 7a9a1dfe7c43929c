/// One key's ``KeyStateMachine`` in a box, so that the ``ClientStateMachine`` reaches every key
/// whatever its value type, and the key's reference reaches its own with its type. It has no
/// lock and tells no one: the ``ClientStorage``'s lock guards every slot, and the storage carries
/// out what the machines ask for.
final class KeySlot<Value: Sendable & Equatable>: BrokerChannel, @unchecked Sendable {
  var machine: KeyStateMachine<Value>

  init(_ machine: KeyStateMachine<Value>) {
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

  func deliverUpdates() -> Bool {
    machine.deliver()
  }

  func markStale() {
    machine.markStale()
  }
}
