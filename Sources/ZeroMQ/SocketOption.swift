internal import CZeroMQ

/// A socket option and the type of its value: `socket.set(.linger, 0)`.
public struct SocketOption<Value>: Sendable {
  let code: Int32
}

extension SocketOption where Value == Int32 {
  /// How long unsent messages linger after close, in milliseconds (default here: 0).
  public static var linger: Self { Self(code: ZMQ_LINGER) }
  /// How many outgoing messages queue per peer before sends block or drop.
  ///
  /// Set it before `bind` or `connect`: libzmq copies the options into a listener when it binds,
  /// so a later change misses every peer that listener accepts.
  public static var sendHighWaterMark: Self { Self(code: ZMQ_SNDHWM) }
  /// How many incoming messages queue per peer before the peer is throttled or dropped.
  ///
  /// Like ``sendHighWaterMark``, set it before `bind` or `connect`.
  public static var receiveHighWaterMark: Self { Self(code: ZMQ_RCVHWM) }
  /// The first reconnect delay, in milliseconds.
  public static var reconnectInterval: Self { Self(code: ZMQ_RECONNECT_IVL) }
  /// The longest reconnect delay, in milliseconds (exponential back-off up to it).
  public static var reconnectIntervalMax: Self { Self(code: ZMQ_RECONNECT_IVL_MAX) }
  /// How often ZMTP heartbeats are sent, in milliseconds.
  public static var heartbeatInterval: Self { Self(code: ZMQ_HEARTBEAT_IVL) }
  /// How long to wait for a heartbeat answer before closing the connection, in milliseconds.
  public static var heartbeatTimeout: Self { Self(code: ZMQ_HEARTBEAT_TIMEOUT) }
  /// The time-to-live the peer should apply to our heartbeats, in milliseconds.
  public static var heartbeatTTL: Self { Self(code: ZMQ_HEARTBEAT_TTL) }
  /// Queue messages only on completed connections (1) or on any (0).
  public static var immediate: Self { Self(code: ZMQ_IMMEDIATE) }
  /// A ROUTER fails a send to an unknown peer instead of dropping it (1).
  public static var routerMandatory: Self { Self(code: ZMQ_ROUTER_MANDATORY) }
  /// Act as a CURVE server (1).
  public static var curveServer: Self { Self(code: ZMQ_CURVE_SERVER) }
  /// An XPUB hands its owner every subscription and unsubscription (1) and applies none
  /// itself: the owner applies what it grants with ``subscribe`` and ``unsubscribe``, which act
  /// on the connection the last received (un)subscription came from.
  public static var xpubManual: Self { Self(code: ZMQ_XPUB_MANUAL) }
  /// How long a blocking receive waits, in milliseconds (-1: forever).
  public static var receiveTimeout: Self { Self(code: ZMQ_RCVTIMEO) }
  /// How long a blocking send waits, in milliseconds (-1: forever).
  public static var sendTimeout: Self { Self(code: ZMQ_SNDTIMEO) }
  /// Readiness flags (read-only): 1 readable, 2 writable.
  public static var events: Self { Self(code: ZMQ_EVENTS) }
  /// A descriptor that turns readable when ``events`` may have changed (read-only): poll it
  /// instead of the socket, then read ``events``; a send or receive on the socket can clear it.
  public static var fileDescriptor: Self { Self(code: ZMQ_FD) }
}

extension SocketOption where Value == Int64 {
  /// The largest message a peer may send; bigger ones close that peer's connection.
  public static var maxMessageSize: Self { Self(code: ZMQ_MAXMSGSIZE) }
}

extension SocketOption where Value == [UInt8] {
  /// Subscribes a SUB socket to a topic prefix (on a manual XPUB: the connection whose
  /// subscription was received last).
  public static var subscribe: Self { Self(code: ZMQ_SUBSCRIBE) }
  /// Removes a subscription.
  public static var unsubscribe: Self { Self(code: ZMQ_UNSUBSCRIBE) }
  /// The identity a ROUTER peer sees for this socket.
  public static var routingID: Self { Self(code: ZMQ_ROUTING_ID) }
  /// This socket's CURVE public key (32 bytes).
  public static var curvePublicKey: Self { Self(code: ZMQ_CURVE_PUBLICKEY) }
  /// This socket's CURVE secret key (32 bytes).
  public static var curveSecretKey: Self { Self(code: ZMQ_CURVE_SECRETKEY) }
  /// The server's CURVE public key, for a client (32 bytes).
  public static var curveServerKey: Self { Self(code: ZMQ_CURVE_SERVERKEY) }
  /// The ZAP domain of a server socket.
  public static var zapDomain: Self { Self(code: ZMQ_ZAP_DOMAIN) }
}

extension SocketOption where Value == String {
  /// The endpoint actually bound, e.g. `tcp://127.0.0.1:41234` after binding port `*`.
  public static var lastEndpoint: Self { Self(code: ZMQ_LAST_ENDPOINT) }
}
