import Foundation
internal import DequeModule
import Synchronization

/// What the threads that use one key share of it: the snapshot readers see (the local value,
/// its errors, a stamp), the pending mutations as closures, and the lock `withLock` bodies run
/// under. The client's ``ClientMachine`` is not here: the I/O thread owns it, and hears of each
/// mutation through the ``ClientStorage``'s mailbox.
///
/// Two locks: `body` serializes the mutations (a user's body runs under it, and so does the I/O
/// thread's installing of a rebased value, so no body computes on a value a rebase replaced
/// meanwhile); `state` is a leaf lock around the snapshot, taken briefly by readers, writers and
/// the I/O thread, with nothing called under it.
final class KeySlot: Sendable {
  /// A mutation of the user's, kept until the broker confirms it, to re-apply in rebases.
  struct Mutation: Sendable {
    let sequence: UInt64
    let apply: @Sendable (inout KeyValue) -> Void
  }

  /// The key's snapshot, with what only this slot's lock guards.
  struct State {
    var value: KeyValue
    /// Grows with every change of the value or of the errors: observers hear of each once.
    var stamp: UInt64 = 1
    var isLoading = true
    var loadError: (any Error)?
    var saveError: (any Error)?
    /// The mutations the broker has not confirmed, in sequence order.
    var pending: Deque<Mutation> = []
    /// The sequence the next mutation gets.
    var nextSequence: UInt64 = 1
    /// How many mutations the broker refused (`forbidden`), which were dropped.
    var refusedCount = 0
    /// Tells the key's reference of its value (or errors) and the value's stamp; `nil` once the
    /// client closed.
    var tell: (@Sendable (KeyValue, UInt64, _ onlyTheValue: Bool) -> Void)?
  }

  /// The key's place in the client's machine.
  let index: Int
  /// Tells this slot from an earlier one of the same key, declared with another value type.
  let epoch: UInt64
  let key: String
  let codec: BrokerCodec<KeyValue>
  /// Serializes the key's mutations. Recursive: a body may mutate the key again.
  let body = NSRecursiveLock()
  let state: Mutex<State>

  init(
    index: Int, epoch: UInt64, key: String, initialValue: KeyValue,
    codec: BrokerCodec<KeyValue>
  ) {
    self.index = index
    self.epoch = epoch
    self.key = key
    self.codec = codec
    state = Mutex(State(value: initialValue))
  }

  /// What observers are told after a change: the value, its stamp, and whom to call.
  struct Told {
    let value: KeyValue
    let stamp: UInt64
    let tell: (@Sendable (KeyValue, UInt64, _ onlyTheValue: Bool) -> Void)?

    /// Tells the reference's observers; `onlyTheValue`: the errors cannot have changed.
    func deliver(onlyTheValue: Bool) {
      tell?(value, stamp, onlyTheValue)
    }
  }

  /// Records a mutation's result as the local value: returns its sequence and what to tell.
  func record(_ value: KeyValue, apply: @escaping @Sendable (inout KeyValue) -> Void)
    -> (sequence: UInt64, told: Told)
  {
    state.withLock { state in
      let sequence = state.nextSequence
      state.nextSequence += 1
      state.value = value
      state.stamp += 1
      state.pending.append(Mutation(sequence: sequence, apply: apply))
      return (sequence, Told(value: value, stamp: state.stamp, tell: state.tell))
    }
  }

  /// The pending mutations after `sequence`, in order.
  func pending(after sequence: UInt64) -> [Mutation] {
    state.withLock { state in state.pending.filter { $0.sequence > sequence } }
  }

  /// How many mutations the broker has not confirmed.
  var unconfirmedWriteCount: Int { state.withLock { $0.pending.count } }

  /// How many mutations the broker refused (`forbidden`), which were dropped.
  var refusedWriteCount: Int { state.withLock { $0.refusedCount } }

  /// The client closed: the reference keeps its value, and hears nothing more.
  func close() {
    state.withLock { $0.tell = nil }
  }

  /// Drops the mutations the broker refused, counting them.
  func refuse(_ sequences: ClosedRange<UInt64>) {
    state.withLock { state in
      while let first = state.pending.first, first.sequence <= sequences.upperBound {
        if sequences.contains(first.sequence) { state.refusedCount += 1 }
        state.pending.removeFirst()
      }
    }
  }

  /// Drops the mutations the broker confirmed, through `sequence`.
  func confirm(through sequence: UInt64) {
    state.withLock { state in
      while let first = state.pending.first, first.sequence <= sequence {
        state.pending.removeFirst()
      }
    }
  }
}
