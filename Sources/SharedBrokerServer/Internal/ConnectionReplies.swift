import Foundation

/// Keeps each connection's answers in the order of its requests while some of them wait on the
/// store: a request that waits takes a ticket, and the answers behind it are held until its
/// own is known. A connection with nothing waiting is answered at once, with no bookkeeping.
struct ConnectionReplies {
  /// A place in a connection's order of answers.
  struct Ticket: Equatable {
    let peer: Data
    let number: UInt64
  }

  private enum Slot {
    case waiting
    /// The answer, or `nil` for a request that gets none.
    case ready(BrokerMessage?)
  }

  private struct Queue {
    /// The ticket number of `slots.first`.
    var first: UInt64
    var slots: [Slot]
    /// Where the slots start in `slots` (slots before it went out).
    var head = 0
  }

  private var queues: [Data: Queue] = [:]

  /// Connections with answers held back.
  var waiting: Int { queues.count }

  /// Reserves the next place in `peer`'s order.
  mutating func reserve(_ peer: Data) -> Ticket {
    guard var queue = queues.removeValue(forKey: peer) else {
      queues[peer] = Queue(first: 0, slots: [.waiting])
      return Ticket(peer: peer, number: 0)
    }
    queue.slots.append(.waiting)
    queues[peer] = queue
    return Ticket(peer: peer, number: queue.first + UInt64(queue.slots.count - 1))
  }

  /// Answers `peer` now, or after the answers it still waits for.
  mutating func reply(
    _ message: BrokerMessage, to peer: Data, into actions: inout [BrokerMachine.Action]
  ) {
    guard queues[peer] != nil else {
      actions.append(.reply(peer: peer, message))
      return
    }
    queues[peer]!.slots.append(.ready(message))
  }

  /// Fills a reserved place, and sends what is now at the head of its connection's order.
  mutating func answer(
    _ ticket: Ticket, with message: BrokerMessage?, into actions: inout [BrokerMachine.Action]
  ) {
    guard var queue = queues.removeValue(forKey: ticket.peer) else { return }
    let index = Int(ticket.number - queue.first)
    guard index >= queue.head, index < queue.slots.count else {
      queues[ticket.peer] = queue
      return
    }
    queue.slots[index] = .ready(message)
    while queue.head < queue.slots.count, case .ready(let ready) = queue.slots[queue.head] {
      if let ready { actions.append(.reply(peer: ticket.peer, ready)) }
      queue.head += 1
    }
    guard queue.head < queue.slots.count else { return }
    if queue.head > 64 {
      queue.slots.removeFirst(queue.head)
      queue.first += UInt64(queue.head)
      queue.head = 0
    }
    queues[ticket.peer] = queue
  }
}
