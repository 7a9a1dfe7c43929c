/// Every error a broker client reports, with a code to switch on and a readable message.
///
/// A `.broker` key's `saveError` holds one when the broker refused its write (the mutations stay
/// pending and are retried) or its value cannot be encoded, and its `loadError` when the broker's
/// value does not decode. ``BrokerClient``'s waits throw one when they time out or the broker
/// refuses the connection.
public struct BrokerError: Error, Equatable, CustomStringConvertible, Sendable {
  /// What went wrong.
  public enum Code: Equatable, Hashable, Sendable {
    /// The broker answered `ERROR` with this code (or would have: a value over the limit the
    /// broker announced is refused before it is sent).
    case refused(BrokerErrorCode)
    /// The broker did not answer, or did not confirm, in time.
    case timedOut
    /// The broker refused the connection's security handshake (wrong keys or mechanism).
    case handshakeFailed
    /// The broker's value does not decode as the key's type; the last good value stays.
    case undecodableValue
    /// The key's value cannot be encoded; it stays local.
    case unencodableValue
  }

  /// What went wrong.
  public let code: Code
  /// The key concerned, if one is.
  public let key: String?
  /// A readable explanation.
  public let message: String

  /// Creates an error.
  ///
  /// - Parameters:
  ///   - code: What went wrong.
  ///   - key: The key concerned, if one is.
  ///   - message: A readable explanation.
  public init(_ code: Code, key: String? = nil, _ message: String) {
    self.code = code
    self.key = key
    self.message = message
  }

  /// The explanation.
  public var description: String { message }
}
