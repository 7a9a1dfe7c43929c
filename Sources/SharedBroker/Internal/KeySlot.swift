/// One key's ``KeyStateMachine`` in a box, which the ``ClientStateMachine`` and the key's
/// reference share. It has no lock and tells no one: the ``ClientStorage``'s lock guards every
/// slot, and the storage carries out what the machines ask for. It runs the user's mutations
/// when a rebase is due, outside the machine's access, so that a mutation may read shared values.
final class KeySlot: BrokerChannel, @unchecked Sendable {
  var machine: KeyStateMachine
  /// A rebase runs: a mutation that reads the key meanwhile sees the value before it.
  private var rebasing = false

  init(_ machine: KeyStateMachine) {
    self.machine = machine
  }

  var key: String { machine.key }
  var hasUnconfirmedWrites: Bool { machine.hasUnconfirmedWrites }
  var unconfirmedWriteCount: Int { machine.unconfirmedWriteCount }
  var isSynced: Bool { machine.isSynced }
  var heldVersion: UInt64? { machine.heldVersion }

  func handle(_ event: KeyEvent) -> KeyOutput {
    // A write carries the local value, which must include the newest rebase.
    if case .flush = event { catchUp() }
    var output = machine.handle(event)
    // A snapshot or a rejection replaced the confirmed value: observers see the rebased one.
    // Updates wait for the end of their batch (``deliverUpdates()``), decoded once.
    if case .received(.update, _, _) = event { return output }
    catchUp()
    output.changed = machine.takeUnnotified() || output.changed
    return output
  }

  func deliverUpdates() -> Bool {
    catchUp()
    return machine.takeUnnotified()
  }

  /// Brings the local value up to date: decodes a newer confirmed value, and re-applies the
  /// pending mutations on it here, outside the machine, so that a mutation may read shared
  /// values, its own key's too. Returns the local value it replaced, if it changed.
  @discardableResult
  func catchUp() -> KeyValue? {
    guard !rebasing else { return nil }
    rebasing = true
    defer { rebasing = false }
    var replaced: KeyValue?
    // A mutation that itself mutates the key makes its rebase stale; after a few tries the
    // rebase stays due, for the next read or event.
    for _ in 0..<3 {
      guard let rebase = machine.rebaseDue() else { break }
      var value = rebase.base
      for pending in rebase.pending { pending.mutation(&value) }
      if let old = machine.rebased(value, rebase) { replaced = replaced ?? old }
    }
    return replaced
  }

  func markStale() {
    machine.markStale()
  }
}
