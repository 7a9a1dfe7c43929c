public import Dependencies
public import Foundation
internal import IssueReporting
public import Sharing

/// A key whose value is mirrored through the broker to every process that declares it.
///
/// ```swift
/// @Shared(.broker("stats")) var stats = Stats()
/// ```
///
/// Mutations show locally at once and are confirmed by the broker as compare-and-set writes;
/// concurrent `withLock` mutations from several processes all apply (none is lost). The value
/// travels as JSON (through the code that `@JSONCodable` generates, for a value that has it), or
/// in the encoding given to ``Sharing/SharedReaderKey/broker(_:decode:encode:)``; one that does
/// not decode sets `loadError` (a ``BrokerError``) and the last good value stays.
///
/// Observers hear every update that arrives on its own. A process that falls behind a burst
/// (several updates of the key waiting at once) jumps to the newest value and tells its
/// observers once: intermediate values are skipped, never anyone's mutations.
public struct BrokerKey<Value: Sendable & Equatable>: SharedKey {
  /// The key's name on the broker.
  public let name: String
  let client: BrokerClient
  let codec: BrokerCodec<Value>

  init(name: String, codec: BrokerCodec<Value>) {
    @Dependency(\.brokerClient) var client
    self.name = name
    self.client = client
    self.codec = codec
  }

  /// The name, per client connection.
  public var id: BrokerKeyID { BrokerKeyID(name: name, client: client.id) }

  /// `.broker("name")`.
  public var description: String { ".broker(\(String(reflecting: name)))" }

  /// Loading happens in the broker reference (snapshots over the client connection).
  public func load(context _: LoadContext<Value>, continuation: LoadContinuation<Value>) {
    continuation.resumeReturningInitialValue()
  }

  /// Updates arrive through the broker reference.
  public func subscribe(
    context _: LoadContext<Value>, subscriber _: SharedSubscriber<Value>
  ) -> SharedSubscription {
    SharedSubscription {}
  }

  /// Writes go through the broker reference, which keeps every mutation until confirmed.
  public func save(_: Value, context _: SaveContext, continuation: SaveContinuation) {
    continuation.resume()
  }
}

extension BrokerKey: ReferenceProvidingKey {
  /// The one reference for this key on this client.
  package func makeReference(initialValue: Value) -> any MutableReference<Value> {
    client.reference(key: name, initialValue: initialValue, codec: codec)
  }
}

/// The identity of a ``BrokerKey``: a name on one client connection.
public struct BrokerKeyID: Hashable, Sendable {
  let name: String
  let client: String
}

extension SharedReaderKey {
  /// A value mirrored across processes through the broker.
  ///
  /// - Parameter name: The key on the broker: 1 to 256 bytes of UTF-8, no control characters.
  /// - Returns: The key.
  public static func broker<Value: Codable>(_ name: String) -> Self where Self == BrokerKey<Value> {
    BrokerKey(name: name, codec: .json)
  }

  /// A value mirrored across processes through the broker, in an encoding of your own.
  ///
  /// Every process that declares the key must use the same encoding. The first declaration of a
  /// name on a client decides its encoding for that client.
  ///
  /// - Parameters:
  ///   - name: The key on the broker: 1 to 256 bytes of UTF-8, no control characters.
  ///   - decode: Turns the broker's bytes into a value.
  ///   - encode: Turns a value into the bytes sent to the broker.
  /// - Returns: The key.
  public static func broker<Value>(
    _ name: String,
    decode: @escaping @Sendable (Data) throws -> Value,
    encode: @escaping @Sendable (Value) throws -> Data
  ) -> Self where Self == BrokerKey<Value> {
    BrokerKey(name: name, codec: BrokerCodec(decode: decode, encode: encode))
  }
}

private enum BrokerClientKey: DependencyKey {
  static var liveValue: BrokerClient {
    BrokerClient(
      endpoint: ProcessInfo.processInfo.environment["SHARED_BROKER_URL"] ?? "tcp://127.0.0.1:5555"
    )
  }

  static var testValue: BrokerClient {
    reportIssue(
      """
      A ".broker" key was used in a test without a broker client. Start a broker fixture and \
      set one: withDependencies { $0.brokerClient = fixture.makeClient() }.
      """
    )
    return BrokerClient(endpoint: "inproc://unconfigured-broker")
  }
}

extension DependencyValues {
  /// The process's connection to the broker, used by every `.broker` key. Live, it connects to
  /// `$SHARED_BROKER_URL` (default `tcp://127.0.0.1:5555`); configure it once at start-up.
  public var brokerClient: BrokerClient {
    get { self[BrokerClientKey.self] }
    set { self[BrokerClientKey.self] = newValue }
  }
}
