internal import CZeroMQ
import Glibc

/// A Linux eventfd that any thread may signal to wake a thread waiting in ``Poller/poll(timeout:)``
/// (sockets are single-threaded; this is how other threads hand work to a socket's owner).
public final class WakeUpSignal: Sendable {
  /// The descriptor to add to a ``Poller``.
  public let fileDescriptor: Int32

  /// Creates the signal.
  ///
  /// - Throws: ``ZMQError`` carrying `errno` when the kernel refuses an eventfd.
  public init() throws {
    let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
    guard fd >= 0 else { throw ZMQError(code: errno, function: "eventfd") }
    fileDescriptor = fd
  }

  deinit {
    Glibc.close(fileDescriptor)
  }

  /// Wakes the poller; several signals before it wakes count as one.
  public func signal() {
    var one: UInt64 = 1
    _ = withUnsafeBytes(of: &one) { write(fileDescriptor, $0.baseAddress, 8) }
  }

  /// Clears the signal; call after the poller reported it readable.
  public func clear() {
    var value: UInt64 = 0
    _ = withUnsafeMutableBytes(of: &value) { read(fileDescriptor, $0.baseAddress, 8) }
  }
}
