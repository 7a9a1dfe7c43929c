public import Foundation

/// One message of the wire protocol, as documented in PROTOCOL.md.
///
/// Requests travel from a client's DEALER to the broker's ROUTER; replies come back the same
/// way; updates go out on the broker's PUB socket with the key and a NUL as the topic frame.
public enum BrokerMessage: Equatable, Sendable {
  // MARK: Requests
  /// `HELLO version client`: announces a client on this connection, which every `SYNC`, `GET`,
  /// `SEED` and `WRITE` needs first, and the protocol version it speaks (one of
  /// ``acceptedProtocolVersions``); answered by
  /// ``welcome(instance:publisher:maxValueSize:brokers:version:)`` in that version.
  case hello(client: String, version: String = BrokerMessage.protocolVersion)
  /// `PING [key version]...`: liveness check, with the versions the client holds; answered by
  /// ``pong(instance:behind:)``.
  case ping(versions: [KeyVersion] = [])
  /// `SYNC client key`: asks the broker to publish ``synced(key:client:)`` on the key's topic,
  /// which proves that this client's subscription to the key is in effect.
  case sync(client: String, key: String)
  /// `GET client key`: asks for a key's current value; answered by
  /// ``snapshot(key:version:lastWrite:value:writes:)``.
  case get(client: String, key: String)
  /// `WRITE client write key base value [after]`: compare-and-set. Accepted only when `base` is
  /// the key's current version and, for a pipelined write, when that version was made by this
  /// client's write `after` (so a write queued behind a rejected one can never land). A `quiet`
  /// one is sent as `WRITEQ` and gets no ``ack(key:write:version:)`` when it is applied: its
  /// writer, which hears the key, learns it from its own
  /// ``update(key:version:client:write:value:)``.
  case write(
    client: String, write: UInt64, key: String, base: UInt64, value: Data, after: UInt64? = nil,
    quiet: Bool = false)
  /// `SEED client key origin version value [writer write]...`: offers the copy of a key that
  /// this client confirmed under the broker instance `origin` at `version`, to a broker that
  /// may have lost it; `writes` are the last write ids of each client the copy is known to
  /// include. Answered by ``snapshot(key:version:lastWrite:value:writes:)`` with the key's
  /// state after the broker's decision.
  case seed(
    client: String, key: String, origin: String, version: UInt64, value: Data,
    writes: [String: UInt64]
  )

  // MARK: Replies
  /// `WELCOME version instance publisher [maxValueSize [broker]...]`: the protocol version the
  /// broker speaks on this connection (the one its `HELLO` asked for), the broker's instance id
  /// (new on every start), where its PUB socket listens, the largest value it accepts (absent
  /// from a broker that does not say), and, from a broker of a cluster, the ROUTER endpoints of
  /// the cluster's brokers, so that a client given one learns the others.
  case welcome(
    instance: String, publisher: String, maxValueSize: UInt64? = nil, brokers: [String] = [],
    version: String = BrokerMessage.protocolVersion)
  /// `PONG instance [key version]...`: the keys of the `PING` whose version on the broker is
  /// not the one the client holds, with the broker's version.
  case pong(instance: String, behind: [KeyVersion] = [])
  /// `SNAPSHOT key version lastWrite value [writer write]...`: version 0 means the key has no
  /// value yet; `lastWrite` is the last write of the asking client applied to this key; `writes`
  /// are the last write ids of the key's most recent writers, which the value includes (a client
  /// offers them with its copy, should the broker lose the key).
  case snapshot(
    key: String, version: UInt64, lastWrite: UInt64, value: Data, writes: [String: UInt64] = [:])
  /// `ACK key write version`: the write was applied and became `version`.
  case ack(key: String, write: UInt64, version: UInt64)
  /// `REJECT key write version lastWrite value [writer write]...`: the write was not applied now,
  /// because its base was stale or because it had already been applied (`lastWrite` ≥ `write`);
  /// here is the current state, with the last write ids of those who wrote the versions after
  /// the write's base.
  case reject(
    key: String, write: UInt64, version: UInt64, lastWrite: UInt64, value: Data,
    writes: [String: UInt64] = [:]
  )
  /// `ERROR code message [key write]`: the request was refused.
  case error(code: BrokerErrorCode, message: String, key: String?, write: UInt64?)

  // MARK: Published
  /// `key UPDATE version client write value` on the PUB socket.
  case update(key: String, version: UInt64, client: String, write: UInt64, value: Data)
  /// `key SYNCED client` on the PUB socket: the answer to ``sync(client:key:)``.
  case synced(key: String, client: String)
  /// `\u{1}brokers BROKERS [broker]...` on the PUB socket, on its own topic
  /// (``brokersTopic``): a cluster's brokers changed, and these are their ROUTER endpoints now.
  case brokers([String])
}

/// Why the broker refused a request.
public enum BrokerErrorCode: String, Sendable {
  /// The frames did not form a known request.
  case badRequest = "bad-request"
  /// The command is not one the broker knows.
  case unknownCommand = "unknown-command"
  /// The key is empty, longer than 256 bytes, not UTF-8 or has control characters.
  case invalidKey = "invalid-key"
  /// The value is larger than the broker accepts.
  case tooLarge = "too-large"
  /// The broker could not persist the write; it was not applied.
  case storage = "storage"
  /// The client speaks another protocol version.
  case version = "version"
  /// The connection has not said `HELLO` (a new connection, or the broker restarted).
  case helloFirst = "hello"
  /// The broker is collecting the copies of clients after a restart; retry the write later.
  case seeding = "seeding"
  /// The broker cannot reach its cluster's shared store: use another broker of the cluster.
  case unavailable = "unavailable"
  /// The client's CURVE key may not do this: the key is outside its permissions, the client id
  /// belongs to another client key, or its key is no longer on the broker's allow-list.
  case forbidden = "forbidden"
}

/// A key and a version, as `PING` and `PONG` list them.
public struct KeyVersion: Equatable, Sendable {
  /// The key.
  public var key: String
  /// Its version.
  public var version: UInt64

  /// Creates a pair.
  public init(key: String, version: UInt64) {
    self.key = key
    self.version = version
  }
}

extension BrokerMessage {
  /// The protocol version this build's clients speak: version 5 added `WRITEQ`.
  public static let protocolVersion = "5"

  /// The protocol versions a broker of this build welcomes, oldest first. Each adds to the one
  /// before, so a client of an older one is answered as it expects.
  public static let acceptedProtocolVersions = ["4", protocolVersion]

  /// The topic of ``brokers(_:)``: its first byte is a control character, which no key has, so
  /// no key's subscription receives it.
  public static let brokersTopic = "\u{1}brokers"

  /// The topic a key's ``update(key:version:client:write:value:)`` and
  /// ``synced(key:client:)`` are published on: the key's bytes and a NUL, so that subscribing
  /// to it receives that key alone (ZeroMQ matches topics by prefix).
  public static func topic(of key: String) -> Data { Frames.topic(key) }

  /// How many of a key's most recent writers a client's copy and a broker's entry remember:
  /// enough for any write whose `ACK` a restart or a move may have lost.
  package static let recentWriters = 64

  /// The client a request names (`PING` and every reply name none).
  package var client: String? {
    switch self {
    case .hello(let client, _), .sync(let client, _), .get(let client, _),
      .write(let client, _, _, _, _, _, _),
      .seed(let client, _, _, _, _, _):
      client
    default:
      nil
    }
  }

  /// Whether this is a `HELLO` or a `PING`, the requests that ask whether the broker serves.
  package var isHelloOrPing: Bool {
    switch self {
    case .hello, .ping: true
    default: false
    }
  }

  /// The frames of this message.
  public var frames: [Data] {
    var frames = FrameBuffer()
    encode(into: &frames)
    return frames.frames
  }

  /// Appends the frames of this message to `frames`: a sender that reuses one buffer makes no
  /// `Data` and no list per message.
  package func encode(into frames: inout FrameBuffer) {
    switch self {
    case .hello(let client, let version):
      frames.append(text: "HELLO")
      frames.append(text: version)
      frames.append(text: client)
    case .ping(let versions):
      frames.append(text: "PING")
      frames.append(pairs: versions)
    case .sync(let client, let key):
      frames.append(text: "SYNC")
      frames.append(text: client)
      frames.append(text: key)
    case .get(let client, let key):
      frames.append(text: "GET")
      frames.append(text: client)
      frames.append(text: key)
    case .write(let client, let write, let key, let base, let value, let after, let quiet):
      frames.append(text: quiet ? "WRITEQ" : "WRITE")
      frames.append(text: client)
      frames.append(number: write)
      frames.append(text: key)
      frames.append(number: base)
      frames.append(value)
      if let after { frames.append(number: after) }
    case .seed(let client, let key, let origin, let version, let value, let writes):
      frames.append(text: "SEED")
      frames.append(text: client)
      frames.append(text: key)
      frames.append(text: origin)
      frames.append(number: version)
      frames.append(value)
      frames.append(writes: writes)
    case .welcome(let instance, let publisher, let maxValueSize, let brokers, let version):
      frames.append(text: "WELCOME")
      frames.append(text: version)
      frames.append(text: instance)
      frames.append(text: publisher)
      // The brokers follow the size limit, which a broker that names them always gives.
      if let limit = maxValueSize ?? (brokers.isEmpty ? nil : UInt64.max) {
        frames.append(number: limit)
      }
      for broker in brokers { frames.append(text: broker) }
    case .pong(let instance, let behind):
      frames.append(text: "PONG")
      frames.append(text: instance)
      frames.append(pairs: behind)
    case .snapshot(let key, let version, let lastWrite, let value, let writes):
      frames.append(text: "SNAPSHOT")
      frames.append(text: key)
      frames.append(number: version)
      frames.append(number: lastWrite)
      frames.append(value)
      frames.append(writes: writes)
    case .ack(let key, let write, let version):
      frames.append(text: "ACK")
      frames.append(text: key)
      frames.append(number: write)
      frames.append(number: version)
    case .reject(let key, let write, let version, let lastWrite, let value, let writes):
      frames.append(text: "REJECT")
      frames.append(text: key)
      frames.append(number: write)
      frames.append(number: version)
      frames.append(number: lastWrite)
      frames.append(value)
      frames.append(writes: writes)
    case .error(let code, let message, let key, let write):
      frames.append(text: "ERROR")
      frames.append(text: code.rawValue)
      frames.append(text: message)
      if let key, let write {
        frames.append(text: key)
        frames.append(number: write)
      }
    case .update(let key, let version, let client, let write, let value):
      frames.append(topic: key)
      frames.append(text: "UPDATE")
      frames.append(number: version)
      frames.append(text: client)
      frames.append(number: write)
      frames.append(value)
    case .synced(let key, let client):
      frames.append(topic: key)
      frames.append(text: "SYNCED")
      frames.append(text: client)
    case .brokers(let brokers):
      frames.append(text: Self.brokersTopic)
      frames.append(text: "BROKERS")
      for broker in brokers { frames.append(text: broker) }
    }
  }

  /// Decodes a request or reply (not an update: those start with their topic).
  ///
  /// - Parameter frames: The frames, without the ROUTER's identity frame.
  /// - Throws: ``BrokerProtocolError`` naming what is wrong.
  public init(frames: [Data]) throws(BrokerProtocolError) {
    try self.init(request: frames[...])
  }

  /// Decodes a request or reply received into a ``FrameBuffer``, reading its fields in place.
  package init(frames: FrameBuffer) throws(BrokerProtocolError) {
    try self.init(request: frames)
  }

  private init(request frames: some FrameSource) throws(BrokerProtocolError) {
    guard frames.count > 0, let command = frames.text(0) else {
      throw .malformed("empty message or non-UTF-8 command")
    }
    // The fields follow the command: field 0 is frame 1.
    let fieldCount = frames.count - 1
    func count(_ expected: Int) throws(BrokerProtocolError) {
      guard fieldCount == expected else {
        throw .malformed("\(command) has \(fieldCount) fields, expected \(expected)")
      }
    }
    func text(_ index: Int) throws(BrokerProtocolError) -> String {
      guard let text = frames.text(index + 1) else {
        throw .malformed("\(command) field \(index + 1) is not UTF-8")
      }
      return text
    }
    func number(_ index: Int) throws(BrokerProtocolError) -> UInt64 {
      guard let number = frames.number(index + 1) else {
        throw .malformed("\(command) field \(index + 1) is not a decimal number")
      }
      return number
    }
    func key(_ index: Int) throws(BrokerProtocolError) -> String {
      guard let key = frames.key(index + 1) else { throw .invalidKey }
      return key
    }
    func value(_ index: Int) -> Data { frames.data(index + 1) }
    func isEmpty(_ index: Int) -> Bool { frames.withFrame(index + 1) { $0.isEmpty } }
    func pairs(from start: Int) throws(BrokerProtocolError) -> [KeyVersion] {
      guard (fieldCount - start).isMultiple(of: 2) else {
        throw .malformed("\(command) lists key and version pairs")
      }
      var pairs: [KeyVersion] = []
      for index in stride(from: start, to: fieldCount, by: 2) {
        pairs.append(KeyVersion(key: try key(index), version: try number(index + 1)))
      }
      return pairs
    }
    func writes(from start: Int) throws(BrokerProtocolError) -> [String: UInt64] {
      var writes: [String: UInt64] = [:]
      for index in stride(from: start, to: fieldCount, by: 2) {
        let write = try number(index + 1)
        guard write > 0 else { throw .malformed("write ids start at 1") }
        guard writes.updateValue(write, forKey: try text(index)) == nil else {
          throw .malformed("\(command) names a writer twice")
        }
      }
      return writes
    }
    switch command {
    case "HELLO":
      try count(2)
      _ = try number(0)
      let version = try text(0)
      guard Self.acceptedProtocolVersions.contains(version) else { throw .version(version) }
      self = .hello(client: try text(1), version: version)
    case "PING":
      self = .ping(versions: try pairs(from: 0))
    case "SYNC":
      try count(2)
      self = .sync(client: try text(0), key: try key(1))
    case "GET":
      try count(2)
      self = .get(client: try text(0), key: try key(1))
    case "WRITE", "WRITEQ":
      guard fieldCount == 5 || fieldCount == 6 else {
        throw .malformed("\(command) has \(fieldCount) fields, expected 5 or 6")
      }
      let write = try number(1)
      let key = try key(2)
      let after = fieldCount == 6 ? try number(5) : nil
      guard write > 0, after != 0 else { throw .malformed("write ids start at 1") }
      guard !isEmpty(4) else {
        throw .malformed("an empty value means no value: write at least 1 byte")
      }
      self = .write(
        client: try text(0), write: write, key: key, base: try number(3), value: value(4),
        after: after, quiet: command == "WRITEQ"
      )
    case "SEED":
      guard fieldCount >= 5, !fieldCount.isMultiple(of: 2) else {
        throw .malformed("SEED is: client key origin version value [writer write]...")
      }
      guard !isEmpty(4) else { throw .malformed("a seed needs a value") }
      guard try number(3) > 0 else { throw .malformed("a copy has a version from 1") }
      self = .seed(
        client: try text(0), key: try key(1), origin: try text(2), version: try number(3),
        value: value(4), writes: try writes(from: 5)
      )
    case "WELCOME":
      guard fieldCount >= 3 else {
        throw .malformed("WELCOME has \(fieldCount) fields, expected at least 3")
      }
      self = .welcome(
        instance: try text(1), publisher: try text(2),
        maxValueSize: fieldCount >= 4 ? try number(3) : nil,
        brokers: fieldCount > 4 ? try (4..<fieldCount).map(text) : [],
        version: try text(0)
      )
    case "PONG":
      guard fieldCount > 0 else { throw .malformed("PONG has no instance") }
      self = .pong(instance: try text(0), behind: try pairs(from: 1))
    case "SNAPSHOT":
      guard fieldCount >= 4, fieldCount.isMultiple(of: 2) else {
        throw .malformed("SNAPSHOT is: key version lastWrite value [writer write]...")
      }
      self = .snapshot(
        key: try key(0), version: try number(1), lastWrite: try number(2), value: value(3),
        writes: try writes(from: 4)
      )
    case "ACK":
      try count(3)
      self = .ack(key: try key(0), write: try number(1), version: try number(2))
    case "REJECT":
      guard fieldCount >= 5, !fieldCount.isMultiple(of: 2) else {
        throw .malformed("REJECT is: key write version lastWrite value [writer write]...")
      }
      self = .reject(
        key: try key(0), write: try number(1), version: try number(2), lastWrite: try number(3),
        value: value(4), writes: try writes(from: 5)
      )
    case "ERROR":
      guard fieldCount == 2 || fieldCount == 4 else {
        throw .malformed("ERROR has \(fieldCount) fields")
      }
      self = .error(
        code: BrokerErrorCode(rawValue: try text(0)) ?? .badRequest, message: try text(1),
        key: fieldCount == 4 ? try text(2) : nil, write: fieldCount == 4 ? try number(3) : nil
      )
    default:
      throw .unknownCommand(String(command.prefix(32)))
    }
  }

  /// The key and write id of a `WRITE` (or `WRITEQ`) that could not be decoded, where those two
  /// fields are readable, so that the `ERROR` tells a client with writes in flight which one
  /// failed.
  ///
  /// - Parameter frames: The request, without the ROUTER's identity frame.
  /// - Returns: The key (as text, even if it breaks the key rules) and the write id.
  package static func writeFields(of frames: FrameBuffer) -> (key: String, write: UInt64)? {
    guard frames.count >= 4,
      frames.frame(0, equals: writeCommand) || frames.frame(0, equals: quietWriteCommand),
      let write = frames.number(2),
      let key = frames.text(3)
    else { return nil }
    return (key, write)
  }

  private static let writeCommand = Frames.text("WRITE")
  private static let quietWriteCommand = Frames.text("WRITEQ")

  /// The key, version and write id of an `UPDATE` received on the PUB socket, if `client`
  /// wrote it, read without decoding the rest: a writer recognizes its own update this way, and
  /// once its `ACK` came first it has no use for the update.
  ///
  /// The key is not checked against the key rules: a caller only drops what it finds, and
  /// ``init(published:)`` drops a message with an invalid key as well.
  ///
  /// - Parameters:
  ///   - frames: A message received on the PUB socket.
  ///   - client: The frame of the id the update must name as its writer.
  /// - Returns: `nil` for anything else.
  package static func update(
    _ frames: FrameBuffer, writtenBy client: Data
  ) -> (key: String, version: UInt64, write: UInt64)? {
    guard frames.count == 6, frames.frame(3, equals: client),
      frames.frame(1, equals: updateCommand), let version = frames.number(2),
      let write = frames.number(4),
      let key = frames.withFrame(0, { topic in
        topic.last == 0 ? Frames.text(UnsafeRawBufferPointer(rebasing: topic.dropLast())) : nil
      })
    else { return nil }
    return (key, version, write)
  }

  private static let updateCommand = Frames.text("UPDATE")

  /// Decodes a message received on the PUB socket.
  ///
  /// - Parameter frames: `key\0 UPDATE version client write value`, `key\0 SYNCED client` or
  ///   `\u{1}brokers BROKERS [broker]...`.
  /// - Throws: ``BrokerProtocolError``.
  public init(published frames: [Data]) throws(BrokerProtocolError) {
    try self.init(publishedFrom: frames[...])
  }

  /// Decodes a message received on the PUB socket into a ``FrameBuffer``, reading its fields in
  /// place.
  package init(published frames: FrameBuffer) throws(BrokerProtocolError) {
    try self.init(publishedFrom: frames)
  }

  private init(publishedFrom frames: some FrameSource) throws(BrokerProtocolError) {
    if frames.count > 0, frames.frame(0, equals: Self.brokersTopicFrame) {
      guard frames.count >= 2, frames.text(1) == "BROKERS" else {
        throw .malformed("the brokers' topic carries: BROKERS [broker]...")
      }
      var brokers: [String] = []
      for index in 2..<frames.count {
        guard let broker = frames.text(index) else { throw .malformed("a broker is not UTF-8") }
        brokers.append(broker)
      }
      self = .brokers(brokers)
      return
    }
    guard frames.count >= 2, let key = frames.withFrame(0, Frames.key(topic:)) else {
      throw .invalidKey
    }
    switch frames.text(1) {
    case "UPDATE":
      guard frames.count == 6, let version = frames.number(2), let client = frames.text(3),
        let write = frames.number(4)
      else { throw .malformed("an update is: key UPDATE version client write value") }
      self = .update(
        key: key, version: version, client: client, write: write, value: frames.data(5))
    case "SYNCED":
      guard frames.count == 3, let client = frames.text(2) else {
        throw .malformed("a sync answer is: key SYNCED client")
      }
      self = .synced(key: key, client: client)
    default:
      throw .unknownCommand(frames.withFrame(1) { String(decoding: $0.prefix(32), as: UTF8.self) })
    }
  }

  private static let brokersTopicFrame = Frames.text(brokersTopic)
}

/// A message that does not follow the wire protocol.
public enum BrokerProtocolError: Error, Equatable, CustomStringConvertible {
  /// Wrong frame count or a field of the wrong form.
  case malformed(String)
  /// A command nobody knows.
  case unknownCommand(String)
  /// A key that is empty, too long, not UTF-8 or has control characters.
  case invalidKey
  /// Another protocol version.
  case version(String)

  /// The code the broker answers with.
  public var code: BrokerErrorCode {
    switch self {
    case .malformed: .badRequest
    case .unknownCommand: .unknownCommand
    case .invalidKey: .invalidKey
    case .version: .version
    }
  }

  /// A readable explanation.
  public var description: String {
    switch self {
    case .malformed(let detail): "malformed message: \(detail)"
    case .unknownCommand(let command): "unknown command \"\(command)\""
    case .invalidKey: "invalid key (1 to 256 bytes of UTF-8, no control characters)"
    case .version(let version):
      "unsupported protocol version \"\(version)\" (this broker speaks "
        + "\(BrokerMessage.acceptedProtocolVersions.joined(separator: " and ")))"
    }
  }
}
