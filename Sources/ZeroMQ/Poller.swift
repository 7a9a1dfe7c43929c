internal import CZeroMQ
import Glibc

/// Waits until any of several sockets (or plain file descriptors) is readable: `zmq_poll`, or
/// `ppoll(2)` when all are descriptors (sockets can be polled by their
/// ``SocketOption/fileDescriptor``).
///
/// ```swift
/// var poller = Poller()
/// let commands = poller.add(socket)
/// let wakeup = poller.add(fileDescriptor: eventFD)
/// let ready = try poller.poll(timeout: .milliseconds(500))
/// if ready.contains(commands) { ... }
/// ```
public struct Poller {
  /// At most this many items: the result is a 64-bit mask.
  public static let capacity = 64

  private var items: [zmq_pollitem_t] = []
  /// The same items for `poll(2)`, kept so that a poll of descriptors allocates nothing.
  private var descriptors: [pollfd] = []

  /// Creates an empty poller.
  public init() {}

  /// Watches a socket for incoming messages.
  ///
  /// - Parameter socket: The socket; it must stay open while polled.
  /// - Returns: Its index in ``poll(timeout:)``'s result.
  public mutating func add(_ socket: Socket) throws -> Int {
    let handle = try socket.withUnsafeHandle { $0 }
    return append(zmq_pollitem_t(socket: handle, fd: -1, events: Int16(ZMQ_POLLIN), revents: 0))
  }

  /// Watches a file descriptor (a pipe or eventfd used for wake-ups) for readability.
  ///
  /// - Parameter fileDescriptor: The descriptor.
  /// - Returns: Its index in ``poll(timeout:)``'s result.
  public mutating func add(fileDescriptor: Int32) -> Int {
    append(zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: Int16(ZMQ_POLLIN), revents: 0))
  }

  private mutating func append(_ item: zmq_pollitem_t) -> Int {
    precondition(items.count < Self.capacity, "A Poller watches at most \(Self.capacity) items")
    items.append(item)
    descriptors.append(pollfd(fd: item.fd, events: Int16(POLLIN), revents: 0))
    return items.count - 1
  }

  /// Waits until something is readable or `timeout` passes.
  ///
  /// - Parameter timeout: The longest wait; `nil` waits forever.
  /// - Returns: The indices of the readable items (empty on timeout).
  /// - Throws: ``ZMQError`` (`ETERM` once the context is terminated).
  public mutating func poll(timeout: Duration?) throws -> ReadyItems {
    if items.allSatisfy({ $0.socket == nil }) { return pollDescriptors(timeout) }
    let milliseconds =
      timeout.map { duration -> Int in
        let (seconds, attoseconds) = duration.components
        return max(
          0, Int(seconds) * 1_000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        )
      } ?? -1
    let count = items.count
    let ready = try items.withUnsafeMutableBufferPointer { buffer in
      try zmqCall("zmq_poll") { zmq_poll(buffer.baseAddress, Int32(count), milliseconds) }
    }
    guard (ready ?? 0) > 0 else { return [] }
    return ReadyItems(count) { items[$0].revents & Int16(ZMQ_POLLIN) != 0 }
  }

  /// Descriptors only: one `ppoll(2)`, where `zmq_poll` always makes a non-blocking pass first
  /// and rounds the timeout up to a millisecond (too coarse for the clients' first retries).
  /// An interrupted wait returns no items, as a timeout does.
  private mutating func pollDescriptors(_ timeout: Duration?) -> ReadyItems {
    let count = nfds_t(descriptors.count)
    let found: Int32
    if let timeout {
      let (seconds, attoseconds) = max(timeout, .zero).components
      var limit = timespec(
        tv_sec: Int(clamping: seconds), tv_nsec: Int(attoseconds / 1_000_000_000)
      )
      found = ppoll(&descriptors, count, &limit, nil)
    } else {
      found = ppoll(&descriptors, count, nil, nil)
    }
    guard found > 0 else { return [] }
    return ReadyItems(descriptors.count) { descriptors[$0].revents & Int16(POLLIN) != 0 }
  }
}

/// The indices of the items a ``Poller`` found readable. A bit mask rather than a `Set`: the
/// I/O loops poll once per message, and a set costs an allocation each time.
public struct ReadyItems: Equatable, Sendable, ExpressibleByArrayLiteral {
  private var mask: UInt64 = 0

  /// No item.
  public init() {}

  /// The given indices (each below ``Poller/capacity``).
  public init(arrayLiteral indices: Int...) {
    for index in indices { insert(index) }
  }

  /// The indices below `count` for which `isReady` holds.
  init(_ count: Int, where isReady: (Int) -> Bool) {
    for index in 0..<count where isReady(index) { insert(index) }
  }

  /// Whether no item is readable (the poll timed out).
  public var isEmpty: Bool { mask == 0 }

  /// Whether the item at `index` is readable.
  public func contains(_ index: Int) -> Bool {
    (0..<Poller.capacity).contains(index) && mask & (1 << UInt64(index)) != 0
  }

  mutating func insert(_ index: Int) {
    precondition(
      (0..<Poller.capacity).contains(index), "A Poller watches at most \(Poller.capacity) items")
    mask |= 1 << UInt64(index)
  }
}
