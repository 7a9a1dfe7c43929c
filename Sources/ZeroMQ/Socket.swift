internal import CZeroMQ
public import Foundation

/// A ZeroMQ socket. Not thread-safe, like libzmq's: one thread owns it at a time.
///
/// ```swift
/// let socket = try Socket(context: context, type: .dealer)
/// try socket.connect("tcp://127.0.0.1:5555")
/// try socket.send([Data("PING".utf8)])
/// let reply = try socket.receive()
/// ```
///
/// Messages are multipart: arrays of frames of any size. ``close()`` releases the socket;
/// `deinit` closes one that was forgotten.
public final class Socket {
  private var handle: UnsafeMutableRawPointer?
  /// The socket's kind.
  public let type: SocketType

  /// Creates a socket with a zero linger period.
  ///
  /// - Parameters:
  ///   - context: The owning context.
  ///   - type: The kind of socket.
  /// - Throws: ``ZMQError`` when the context is terminated or out of sockets.
  public init(context: Context, type: SocketType) throws {
    self.type = type
    handle = try context.withUnsafeHandle { context in
      guard let socket = zmq_socket(context, type.rawValue) else {
        throw ZMQError(code: zmq_errno(), function: "zmq_socket")
      }
      return socket
    }
    try set(.linger, 0)
  }

  deinit {
    close()
  }

  /// Runs `body` with the C handle; throws once the socket is closed.
  @discardableResult
  public func withUnsafeHandle<R>(_ body: (UnsafeMutableRawPointer) throws -> R) throws -> R {
    guard let handle else { throw ZMQError.closed("socket") }
    return try body(handle)
  }

  /// Closes the socket; later calls throw. Safe to call more than once.
  public func close() {
    guard let handle else { return }
    self.handle = nil
    zmq_close(handle)
  }

  /// Whether ``close()`` was called.
  public var isClosed: Bool { handle == nil }

  // MARK: - Endpoints

  /// Binds to an endpoint (`tcp://127.0.0.1:*` picks a free port; see ``lastEndpoint``).
  ///
  /// - Parameter endpoint: The endpoint.
  /// - Throws: ``ZMQError``, e.g. when the address is in use.
  public func bind(_ endpoint: String) throws {
    try withUnsafeHandle { handle in try zmqCall("zmq_bind") { zmq_bind(handle, endpoint) } }
  }

  /// Connects to an endpoint; the connection is made (and remade) in the background.
  ///
  /// - Parameter endpoint: The endpoint.
  /// - Throws: ``ZMQError`` for a malformed endpoint.
  public func connect(_ endpoint: String) throws {
    try withUnsafeHandle { handle in
      try zmqCall("zmq_connect") { zmq_connect(handle, endpoint) }
    }
  }

  /// Drops a connection made with ``connect(_:)``.
  ///
  /// - Parameter endpoint: The endpoint.
  /// - Throws: ``ZMQError``.
  public func disconnect(_ endpoint: String) throws {
    try withUnsafeHandle { handle in
      try zmqCall("zmq_disconnect") { zmq_disconnect(handle, endpoint) }
    }
  }

  /// The endpoint bound last, with the real port.
  public var lastEndpoint: String {
    get throws { try get(.lastEndpoint) }
  }

  // MARK: - Options

  /// Sets an integer option.
  public func set(_ option: SocketOption<Int32>, _ value: Int32) throws {
    var value = value
    try setRaw(option.code, &value, MemoryLayout<Int32>.size)
  }

  /// Sets a 64-bit option.
  public func set(_ option: SocketOption<Int64>, _ value: Int64) throws {
    var value = value
    try setRaw(option.code, &value, MemoryLayout<Int64>.size)
  }

  /// Sets a bytes option.
  public func set(_ option: SocketOption<[UInt8]>, _ value: [UInt8]) throws {
    try value.withUnsafeBytes { try setRaw(option.code, $0.baseAddress, $0.count) }
  }

  /// Makes this socket a CURVE client of the server whose public key is `serverPublicKey`,
  /// known to it by `publicKey` and `secretKey` (all Z85). libzmq takes options at `connect`, so
  /// this comes before.
  ///
  /// - Throws: ``ZMQError`` when a key is not 40 Z85 characters or libzmq has no CURVE.
  public func setCurveClient(serverPublicKey: String, publicKey: String, secretKey: String) throws {
    try set(.curveServerKey, try CurveKeyPair.decode(serverPublicKey))
    try set(.curvePublicKey, try CurveKeyPair.decode(publicKey))
    try set(.curveSecretKey, try CurveKeyPair.decode(secretKey))
  }

  /// Reads an integer option.
  public func get(_ option: SocketOption<Int32>) throws -> Int32 {
    var value: Int32 = 0
    var size = MemoryLayout<Int32>.size
    try withUnsafeHandle { handle in
      try zmqCall("zmq_getsockopt") { zmq_getsockopt(handle, option.code, &value, &size) }
    }
    return value
  }

  /// Whether a message waits to be received (``SocketOption/events`` says readable); `false`
  /// once the socket or its context is closed, which the next receive reports.
  ///
  /// Asking takes in the socket's pending commands, as a send or receive does, and each of them
  /// may use up the signal on its ``SocketOption/fileDescriptor``. A loop that polls the
  /// descriptor asks this before it sleeps, if it used the socket since its last empty receive.
  public var hasInput: Bool {
    ((try? get(.events)) ?? 0) & Int32(ZMQ_POLLIN) != 0
  }

  /// Reads a string option.
  public func get(_ option: SocketOption<String>) throws -> String {
    var buffer = [CChar](repeating: 0, count: 1024)
    var size = buffer.count
    try withUnsafeHandle { handle in
      try zmqCall("zmq_getsockopt") { zmq_getsockopt(handle, option.code, &buffer, &size) }
    }
    let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
  }

  private func setRaw(_ code: Int32, _ value: UnsafeRawPointer?, _ size: Int) throws {
    try withUnsafeHandle { handle in
      try zmqCall("zmq_setsockopt") { zmq_setsockopt(handle, code, value, size) }
    }
  }

  // MARK: - Messages

  /// Sends a multipart message.
  ///
  /// - Parameters:
  ///   - frames: The frames, at least one.
  ///   - dontWait: Return `false` instead of blocking when the message cannot be queued.
  /// - Returns: Whether the message was queued.
  /// - Throws: ``ZMQError`` (e.g. `EHOSTUNREACH` for a ROUTER with ``SocketOption/routerMandatory``).
  @discardableResult
  public func send(_ frames: [Data], dontWait: Bool = false) throws -> Bool {
    precondition(!frames.isEmpty, "A ZeroMQ message has at least one frame.")
    for (index, frame) in frames.enumerated() {
      let more = index < frames.count - 1
      // Only the first frame can block: the rest of a multipart message is atomic.
      guard try frame.withUnsafeBytes({ try send($0, more: more, dontWait: dontWait) }) else {
        return false
      }
    }
    return true
  }

  /// Sends one frame of a multipart message from bytes the caller holds, copying them once
  /// into libzmq: a sender that encodes a message field by field needs no frames of its own.
  ///
  /// - Parameters:
  ///   - bytes: The frame.
  ///   - more: Whether more frames of the message follow.
  ///   - dontWait: Return `false` instead of blocking when the frame cannot be queued (only a
  ///     message's first frame can: the rest of a multipart message is atomic).
  /// - Returns: Whether the frame was queued.
  /// - Throws: ``ZMQError``.
  @discardableResult
  public func send(_ bytes: UnsafeRawBufferPointer, more: Bool, dontWait: Bool = false) throws
    -> Bool
  {
    var flags: Int32 = more ? ZMQ_SNDMORE : 0
    if dontWait { flags |= ZMQ_DONTWAIT }
    return try withUnsafeHandle { handle in
      try zmqCall("zmq_send") { zmq_send(handle, bytes.baseAddress, bytes.count, flags) } != nil
    }
  }

  /// Receives a multipart message of any size.
  ///
  /// - Parameter dontWait: Return `nil` instead of blocking when nothing is queued.
  /// - Returns: The frames, or `nil` when there was nothing and `dontWait` was set.
  /// - Throws: ``ZMQError`` (`ETERM` once the context is terminated).
  public func receive(dontWait: Bool = false) throws -> [Data]? {
    var frames: [Data] = []
    return try receive(into: &frames, dontWait: dontWait) ? frames : nil
  }

  /// Receives a multipart message into `frames`, replacing what they held but keeping their
  /// storage: a loop that reuses one list allocates no array per message.
  ///
  /// - Parameters:
  ///   - frames: Emptied, then the message's frames.
  ///   - dontWait: Return `false` instead of blocking when nothing is queued.
  /// - Returns: Whether a message was received (`false` only with `dontWait`).
  /// - Throws: ``ZMQError`` (`ETERM` once the context is terminated).
  public func receive(into frames: inout [Data], dontWait: Bool = false) throws -> Bool {
    var userID: String?
    Self.empty(&frames)
    return try receive(userID: nil, &userID, dontWait: dontWait) { frames.append(Data($0)) }
  }

  /// Receives a multipart message into `frames`, as ``receive(into:dontWait:)`` does, and the
  /// `User-Id` its connection's authentication (a ZAP handler) gave it: for a CURVE server, the
  /// client's public key as the handler answered it.
  ///
  /// - Parameters:
  ///   - frames: Emptied, then the message's frames.
  ///   - userID: The message's `User-Id`, or `nil` when its connection has none.
  ///   - dontWait: Return `false` instead of blocking when nothing is queued.
  /// - Returns: Whether a message was received (`false` only with `dontWait`).
  /// - Throws: ``ZMQError`` (`ETERM` once the context is terminated).
  public func receive(
    into frames: inout [Data], userID: inout String?, dontWait: Bool = false
  ) throws -> Bool {
    Self.empty(&frames)
    return try receive(userID: "User-Id", &userID, dontWait: dontWait) { frames.append(Data($0)) }
  }

  /// Receives a multipart message frame by frame: `frame` sees each frame's bytes, in order,
  /// valid only during its call. A loop that copies them into storage it reuses makes no
  /// `Data` and no array per message.
  ///
  /// - Parameters:
  ///   - dontWait: Return `false` instead of blocking when nothing is queued.
  ///   - frame: Called once per frame.
  /// - Returns: Whether a message was received (`false` only with `dontWait`).
  /// - Throws: ``ZMQError`` (`ETERM` once the context is terminated).
  public func receive(
    dontWait: Bool = false, frame: (UnsafeRawBufferPointer) -> Void
  ) throws -> Bool {
    var userID: String?
    return try receive(userID: nil, &userID, dontWait: dontWait, frame: frame)
  }

  /// Receives a multipart message frame by frame, as ``receive(dontWait:frame:)`` does, and the
  /// `User-Id` its connection's authentication gave it, as
  /// ``receive(into:userID:dontWait:)`` does.
  ///
  /// - Parameters:
  ///   - userID: The message's `User-Id`, or `nil` when its connection has none.
  ///   - dontWait: Return `false` instead of blocking when nothing is queued.
  ///   - frame: Called once per frame.
  /// - Returns: Whether a message was received (`false` only with `dontWait`).
  /// - Throws: ``ZMQError`` (`ETERM` once the context is terminated).
  public func receive(
    userID: inout String?, dontWait: Bool = false, frame: (UnsafeRawBufferPointer) -> Void
  ) throws -> Bool {
    try receive(userID: "User-Id", &userID, dontWait: dontWait, frame: frame)
  }

  /// Messages are usually a handful of frames: one allocation rather than one per growth.
  private static func empty(_ frames: inout [Data]) {
    frames.removeAll(keepingCapacity: true)
    if frames.capacity == 0 { frames.reserveCapacity(8) }
  }

  private func receive(
    userID property: String?, _ userID: inout String?, dontWait: Bool,
    frame: (UnsafeRawBufferPointer) -> Void
  ) throws -> Bool {
    try withUnsafeHandle { handle in
      var message = zmq_msg_t()
      zmq_msg_init(&message)
      defer { zmq_msg_close(&message) }
      var first = true
      repeat {
        let flags: Int32 = dontWait && first ? ZMQ_DONTWAIT : 0
        guard try zmqCall("zmq_msg_recv", { zmq_msg_recv(&message, handle, flags) }) != nil else {
          return false
        }
        frame(UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: zmq_msg_size(&message)))
        // A ROUTER makes the identity frame itself, without the connection's metadata: the
        // first frame that has it says.
        if let property, first || userID == nil {
          userID = zmq_msg_gets(&message, property).map { String(cString: $0) }
        }
        first = false
      } while zmq_msg_more(&message) != 0
      return true
    }
  }
}
