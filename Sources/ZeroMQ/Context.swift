internal import CZeroMQ
import Synchronization

#if canImport(Glibc)
  internal import Glibc
#endif

/// A libzmq context: the owner of I/O threads and sockets. One per process is usual; tests give
/// every simulated process its own.
///
/// ```swift
/// let context = try Context()
/// let socket = try Socket(context: context, type: .pub)
/// ```
///
/// Sockets default to a zero linger period, so ``terminate()`` never hangs on unsent messages.
public final class Context: Sendable {
  private let handle: Mutex<UnsafeMutableRawPointer?>

  /// Creates a context.
  ///
  /// - Throws: ``ZMQError`` when libzmq cannot create one.
  public init() throws {
    Self.keepStandardStreamsOpen
    guard let handle = zmq_ctx_new() else {
      throw ZMQError(code: zmq_errno(), function: "zmq_ctx_new")
    }
    self.handle = Mutex(handle)
  }

  deinit {
    terminate()
  }

  /// A process started with stdin, stdout or stderr closed would hand those numbers to the next
  /// descriptors opened, here libzmq's sockets: a log line would then be written into a peer's
  /// TCP stream. Pointing any closed one at /dev/null first keeps 0, 1 and 2 what they claim.
  private static let keepStandardStreamsOpen: Void = {
    for descriptor in Int32(0)...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
      let devNull = open("/dev/null", O_RDWR)
      if devNull >= 0, devNull != descriptor {
        dup2(devNull, descriptor)
        close(devNull)
      }
    }
  }()

  /// Runs `body` with the C handle; throws once the context is terminated.
  public func withUnsafeHandle<R>(_ body: (UnsafeMutableRawPointer) throws -> R) throws -> R {
    guard let handle = handle.withLock({ $0 }) else { throw ZMQError.closed("zmq_ctx") }
    return try body(handle)
  }

  /// Terminates the context: blocked calls on its sockets fail with `ETERM`, and the call
  /// returns once every socket is closed. Safe to call more than once.
  public func terminate() {
    guard let handle = handle.withLock({ handle in
      defer { handle = nil }
      return handle
    }) else { return }
    zmq_ctx_shutdown(handle)
    while zmq_ctx_term(handle) != 0, zmq_errno() == EINTR {}
  }
}
