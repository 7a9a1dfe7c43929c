internal import CZeroMQ
import Glibc

/// Waits until any of several sockets (or plain file descriptors) is readable: `zmq_poll`, or
/// `poll(2)` when all are descriptors (sockets can be polled by their ``SocketOption/fileDescriptor``).
///
/// ```swift
/// var poller = Poller()
/// let commands = poller.add(socket)
/// let wakeup = poller.add(fileDescriptor: eventFD)
/// let ready = try poller.poll(timeout: .milliseconds(500))
/// if ready.contains(commands) { ... }
/// ```
public struct Poller {
  private var items: [zmq_pollitem_t] = []

  /// Creates an empty poller.
  public init() {}

  /// Watches a socket for incoming messages.
  ///
  /// - Parameter socket: The socket; it must stay open while polled.
  /// - Returns: Its index in ``poll(timeout:)``'s result.
  public mutating func add(_ socket: Socket) throws -> Int {
    let handle = try socket.withUnsafeHandle { $0 }
    items.append(zmq_pollitem_t(socket: handle, fd: -1, events: Int16(ZMQ_POLLIN), revents: 0))
    return items.count - 1
  }

  /// Watches a file descriptor (a pipe or eventfd used for wake-ups) for readability.
  ///
  /// - Parameter fileDescriptor: The descriptor.
  /// - Returns: Its index in ``poll(timeout:)``'s result.
  public mutating func add(fileDescriptor: Int32) -> Int {
    items.append(
      zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: Int16(ZMQ_POLLIN), revents: 0)
    )
    return items.count - 1
  }

  /// Waits until something is readable or `timeout` passes.
  ///
  /// - Parameter timeout: The longest wait; `nil` waits forever.
  /// - Returns: The indices of the readable items (empty on timeout).
  /// - Throws: ``ZMQError`` (`ETERM` once the context is terminated).
  public mutating func poll(timeout: Duration?) throws -> Set<Int> {
    let milliseconds = timeout.map { duration -> Int in
      let (seconds, attoseconds) = duration.components
      return max(0, Int(seconds) * 1_000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
    } ?? -1
    if items.allSatisfy({ $0.socket == nil }) { return pollDescriptors(milliseconds) }
    let count = items.count
    let ready = try items.withUnsafeMutableBufferPointer { buffer in
      try zmqCall("zmq_poll") { zmq_poll(buffer.baseAddress, Int32(count), milliseconds) }
    }
    guard (ready ?? 0) > 0 else { return [] }
    return Set(items.indices.filter { items[$0].revents & Int16(ZMQ_POLLIN) != 0 })
  }

  /// Descriptors only: one `poll(2)`, where `zmq_poll` always makes a non-blocking pass first.
  /// An interrupted wait returns no items, as a timeout does.
  private func pollDescriptors(_ milliseconds: Int) -> Set<Int> {
    var descriptors = items.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    guard Glibc.poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: milliseconds)) > 0 else {
      return []
    }
    return Set(descriptors.indices.filter { descriptors[$0].revents & Int16(POLLIN) != 0 })
  }
}
