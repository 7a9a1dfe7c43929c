internal import CZeroMQ

/// A failed libzmq call: the C function, its `errno`, and libzmq's own description.
public struct ZMQError: Error, Equatable, CustomStringConvertible {
  /// The `zmq_errno()` value.
  public let code: Int32
  /// The C function that failed.
  public let function: String
  /// `zmq_strerror(code)`.
  public let message: String

  init(code: Int32, function: String) {
    self.code = code
    self.function = function
    self.message = String(cString: zmq_strerror(code))
  }

  /// A readable explanation: `zmq_bind: Address already in use (errno 98)`.
  public var description: String {
    "\(function): \(message) (errno \(code))"
  }

  /// The context was terminated while the call was blocked.
  public var isContextTerminated: Bool { code == ETERM }

  /// An error of the wrapper itself (a closed socket), not of libzmq.
  static func closed(_ function: String) -> ZMQError {
    ZMQError(code: ENOTSOCK, function: function)
  }
}

/// Calls a libzmq function, retrying on `EINTR`; returns `nil` on `EAGAIN` (would block) and
/// throws anything else with its errno and text.
@discardableResult
func zmqCall(_ function: String, _ body: () -> Int32) throws -> Int32? {
  while true {
    let result = body()
    if result >= 0 { return result }
    let code = zmq_errno()
    switch code {
    case EINTR: continue
    case EAGAIN: return nil
    default: throw ZMQError(code: code, function: function)
    }
  }
}
