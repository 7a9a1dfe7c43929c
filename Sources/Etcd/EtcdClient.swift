internal import AsyncHTTPClient
public import Foundation
package import NIOCore
internal import NIOHTTP1
internal import NIOPosix
internal import NIOSSL
internal import QuickJSON
import Synchronization

/// A client of etcd's v3 API through its JSON gateway (`/v3/kv/range`, `/v3/kv/txn`,
/// `/v3/kv/put`, `/v3/watch` and leases), on async-http-client.
///
/// It takes every client URL of the cluster and sticks to the one that answered last: when that
/// member cannot be reached it tries the next, so a member that dies costs one failed attempt.
///
/// Reads and transactions run on one of async-http-client's event loops and watches on another,
/// never on the task pool: a thread that must wait for one (a broker's) waits without holding a
/// pool thread's turn.
///
/// ```swift
/// let etcd = try EtcdClient(endpoints: ["http://127.0.0.1:2379", "http://127.0.0.1:22379"])
/// let result = try await etcd.transaction(
///   compare: [.modRevision(of: key, equals: 0)], success: [.put(key, value)], failure: [.range(key)])
/// ```
public final class EtcdClient: Sendable {
  /// The cluster's client URLs, such as `http://127.0.0.1:2379`.
  public let endpoints: [String]
  private let http: HTTPClient
  /// The event loop that carries reads and transactions, so that their connections and answers
  /// stay on it (a request made off the group's threads with no preference took the loops in
  /// turn, and an answer then crossed to the other loop), and the one that carries watches, so
  /// that a watched change is decoded beside a transaction's answer rather than ahead of it.
  private let requestLoop: any EventLoop
  private let watchLoop: any EventLoop
  /// Each member's read and transaction requests without a body, by URL, made once: parsing
  /// the URL again for every request was a large part of a commit's work on the caller's thread.
  private let requests: [String: HTTPClient.Request]
  private let requestTimeout: Duration
  /// The endpoint that answered last.
  private let preferred = Atomic<Int>(0)

  /// A comparison a transaction makes before choosing its branch.
  public struct Compare: Sendable {
    let key: Data
    let target: String
    let revision: Int64

    /// The key was last changed at `revision` (0: the key does not exist).
    public static func modRevision(of key: Data, equals revision: Int64) -> Compare {
      Compare(key: key, target: "MOD", revision: revision)
    }

    /// The key was created at `revision` (0: the key does not exist).
    public static func createRevision(of key: Data, equals revision: Int64) -> Compare {
      Compare(key: key, target: "CREATE", revision: revision)
    }
  }

  /// A request inside a transaction branch.
  public enum Operation: Sendable {
    /// Sets the key.
    case put(Data, Data)
    /// Reads the key.
    case range(Data)
    /// Deletes the key.
    case delete(Data)
  }

  /// What a transaction did.
  public struct TransactionResult: Sendable {
    /// The cluster revision after the transaction.
    public var revision: Int64
    /// Whether every comparison held, so the success branch ran.
    public var succeeded: Bool
    /// What each `range` of the branch that ran found, in order.
    public var ranges: [[EtcdKeyValue]]
  }

  /// Creates a client; nothing is sent until the first call.
  ///
  /// - Parameters:
  ///   - endpoints: The members' client URLs (`https://` with TLS).
  ///   - requestTimeout: How long one request may take on one member before the next is tried.
  ///   - tls: How to speak TLS, or `nil` for plain HTTP.
  /// - Throws: ``EtcdTLSError`` when a TLS file cannot be used.
  public init(endpoints: [String], requestTimeout: Duration = .seconds(2), tls: EtcdTLS? = nil)
    throws(EtcdTLSError)
  {
    precondition(!endpoints.isEmpty, "EtcdClient needs at least one endpoint")
    self.endpoints = endpoints
    self.requestTimeout = requestTimeout
    var configuration = HTTPClient.Configuration()
    configuration.timeout.connect = .milliseconds(500)
    configuration.tlsConfiguration = try tls?.configuration()
    http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    requestLoop = http.eventLoopGroup.next()
    watchLoop = http.eventLoopGroup.next()
    var requests: [String: HTTPClient.Request] = [:]
    for url in endpoints.flatMap({ [$0 + "/v3/kv/range", $0 + "/v3/kv/txn"] }) {
      // One that does not parse is made again, and fails, at its first use.
      requests[url] = try? Self.request(url)
    }
    self.requests = requests
  }

  /// Closes the client's connections; call it once, when done.
  public func shutdown() async throws {
    try await http.shutdown()
  }

  /// Reads one key, or every key that starts with `prefix` when `prefix` is true, with a
  /// linearizable read (the cluster's quorum confirms it).
  ///
  /// - Returns: The cluster revision of the read and the keys found.
  public func range(_ key: Data, prefix: Bool = false) async throws -> (
    revision: Int64, keyValues: [EtcdKeyValue]
  ) {
    try await rangeFuture(key, prefix: prefix).get()
  }

  /// ``range(_:prefix:)`` as a future, for a thread that waits for it (`wait()`).
  package func rangeFuture(_ key: Data, prefix: Bool = false) -> EventLoopFuture<
    (revision: Int64, keyValues: [EtcdKeyValue])
  > {
    var body = JSONWriter()
    body.beginObject()
    body.key("key")
    body.string(key.base64EncodedString())
    if prefix {
      body.key("range_end")
      body.string(Self.prefixEnd(key).base64EncodedString())
    }
    body.endObject()
    return call("/v3/kv/range", body.data, as: RangeAnswer.self).flatMapThrowing { answer in
      (answer.header.revisionNumber, try answer.keyValues())
    }
  }

  /// Sets `key` to `value`, attached to `lease` when given: the key is deleted when the lease
  /// expires or is revoked.
  public func put(_ key: Data, _ value: Data, lease: Int64? = nil) async throws {
    var body = JSONWriter()
    body.beginObject()
    body.key("key")
    body.string(key.base64EncodedString())
    body.key("value")
    body.string(value.base64EncodedString())
    if let lease {
      body.key("lease")
      body.string(String(lease))
    }
    body.endObject()
    _ = try await call("/v3/kv/put", body.data, as: PutAnswer.self).get()
  }

  /// Grants a lease that expires `ttl` seconds after its grant or its last
  /// ``keepAlive(lease:)``.
  ///
  /// - Returns: The lease's id.
  public func grantLease(ttl: Int) async throws -> Int64 {
    let answer = try await call("/v3/lease/grant", Data(#"{"TTL":"\#(ttl)"}"#.utf8), as: LeaseAnswer.self)
      .get()
    guard let id = answer.ID.flatMap(Int64.init) else {
      throw EtcdError.malformed("a lease grant without an id")
    }
    return id
  }

  /// Renews a lease for another time to live.
  ///
  /// - Returns: The seconds it has left now, 0 when it had already expired (its keys are gone:
  ///   grant another and put them again).
  public func keepAlive(lease: Int64) async throws -> Int {
    let answer = try await call(
      "/v3/lease/keepalive", Data(#"{"ID":"\#(lease)"}"#.utf8), as: KeepAliveAnswer.self
    ).get()
    return answer.result?.TTL.flatMap(Int.init) ?? 0
  }

  /// Ends a lease now, deleting its keys.
  public func revokeLease(_ lease: Int64) async throws {
    try await revokeLeaseFuture(lease).get()
  }

  /// ``revokeLease(_:)`` as a future, for a thread that waits for it.
  package func revokeLeaseFuture(_ lease: Int64) -> EventLoopFuture<Void> {
    call("/v3/lease/revoke", Data(#"{"ID":"\#(lease)"}"#.utf8), as: PutAnswer.self).map { _ in }
  }

  /// Runs a transaction: `success` when every comparison holds, `failure` otherwise, atomically.
  public func transaction(
    compare: [Compare], success: [Operation], failure: [Operation] = []
  ) async throws -> TransactionResult {
    try await transactionFuture(compare: compare, success: success, failure: failure).get()
  }

  /// ``transaction(compare:success:failure:)`` as a future, for a thread that waits for it.
  package func transactionFuture(
    compare: [Compare], success: [Operation], failure: [Operation] = []
  ) -> EventLoopFuture<TransactionResult> {
    // Written directly: every commit of a cluster broker sends one.
    var body = JSONWriter()
    body.beginObject()
    body.key("compare")
    body.beginArray()
    for comparison in compare {
      body.beginObject()
      body.key("key")
      body.string(comparison.key.base64EncodedString())
      body.key("target")
      body.string(comparison.target)
      body.key("result")
      body.string("EQUAL")
      body.key(comparison.target == "MOD" ? "mod_revision" : "create_revision")
      body.string(String(comparison.revision))
      body.endObject()
    }
    body.endArray()
    for (branch, operations) in [("success", success), ("failure", failure)] {
      body.key(branch)
      body.beginArray()
      for operation in operations {
        body.beginObject()
        switch operation {
        case .put(let key, let value):
          body.key("request_put")
          body.beginObject()
          body.key("key")
          body.string(key.base64EncodedString())
          body.key("value")
          body.string(value.base64EncodedString())
          body.endObject()
        case .range(let key), .delete(let key):
          if case .delete = operation { body.key("request_delete_range") } else { body.key("request_range") }
          body.beginObject()
          body.key("key")
          body.string(key.base64EncodedString())
          body.endObject()
        }
        body.endObject()
      }
      body.endArray()
    }
    body.endObject()
    return call("/v3/kv/txn", body.data, as: TransactionAnswer.self).flatMapThrowing {
      answer in
      TransactionResult(
        revision: answer.header.revisionNumber, succeeded: answer.succeeded ?? false,
        ranges: try (answer.responses ?? []).compactMap { try $0.response_range?.keyValues() })
    }
  }

  /// Follows the changes of every key starting with `prefix`, from `revision` on, handing each
  /// batch to `onBatch` in order on the HTTP client's event loop: a cluster broker's watch
  /// carries one batch per commit, and a hop to a task for each cost more than its decoding.
  ///
  /// It returns only by throwing: ``EtcdError/compacted(revision:)`` when `revision` is no longer
  /// kept, `CancellationError` when the calling task is cancelled, and another error when the
  /// watch is cut (resume from the last batch's revision + 1).
  public func watch(
    prefix: Data, from revision: Int64, onBatch: @escaping @Sendable (EtcdWatchBatch) -> Void
  ) async throws -> Never {
    var body = JSONWriter()
    body.beginObject()
    body.key("create_request")
    body.beginObject()
    body.key("key")
    body.string(prefix.base64EncodedString())
    body.key("range_end")
    body.string(Self.prefixEnd(prefix).base64EncodedString())
    body.key("start_revision")
    body.string(String(revision))
    body.endObject()
    body.endObject()
    let payload = body.data
    let first = preferred.load(ordering: .relaxed)
    var reason = ""
    for offset in endpoints.indices {
      let endpoint = endpoints[(first + offset) % endpoints.count]
      var request = try Self.request(endpoint + "/v3/watch")
      request.body = .bytes(payload)
      let delegate = LineDelegate(
        closed: EtcdError.unreachable(endpoints: endpoints, reason: "watch closed")
      ) { line in
        if let batch = try Self.watchBatch(line) { onBatch(batch) }
      }
      let task = http.execute(
        request: request, delegate: delegate, eventLoop: .delegate(on: watchLoop))
      do {
        try await withTaskCancellationHandler {
          try await task.futureResult.get()
        } onCancel: {
          task.cancel()
        }
      } catch {
        if Task.isCancelled { throw CancellationError() }
        if delegate.accepted { throw error }
        let failure =
          (error as? LineDelegate.Refused).map { "HTTP \($0.status.code)" } ?? Self.describe(error)
        reason = Self.joined(reason, "\(endpoint): \(failure)")
      }
    }
    throw EtcdError.unreachable(endpoints: endpoints, reason: reason)
  }

  // MARK: - HTTP

  /// One request and its decoded answer, on the first member that answers.
  private func call<Answer: Decodable & Sendable>(
    _ path: String, _ payload: Data, as: Answer.Type
  ) -> EventLoopFuture<Answer> {
    let eventLoop = requestLoop
    return attempt(
      path, payload, from: preferred.load(ordering: .relaxed), tried: 0, reason: "", on: eventLoop
    )
    .flatMapThrowing { response in
      let data = response.body.map { Data($0.readableBytesView) } ?? Data()
      guard response.status == .ok else {
        let message = (try? Self.decoder.decode(GatewayError.self, from: data))?.message
        throw EtcdError.refused(
          status: Int(response.status.code),
          message: message ?? String(decoding: data, as: UTF8.self))
      }
      do {
        return try Self.decoder.decode(Answer.self, from: data)
      } catch {
        throw EtcdError.malformed("\(path): \(error)")
      }
    }
  }

  /// Sends to the member at `index`, then to each next one in turn while they cannot be reached
  /// (or, answering 503, have no leader).
  private func attempt(
    _ path: String, _ payload: Data, from index: Int, tried: Int, reason: String,
    on eventLoop: any EventLoop
  ) -> EventLoopFuture<HTTPClient.Response> {
    guard tried < endpoints.count else {
      return eventLoop.makeFailedFuture(EtcdError.unreachable(endpoints: endpoints, reason: reason))
    }
    let endpoint = endpoints[index % endpoints.count]
    var request: HTTPClient.Request
    do {
      request = try requests[endpoint + path] ?? Self.request(endpoint + path)
    } catch {
      return eventLoop.makeFailedFuture(error)
    }
    request.body = .bytes(payload)
    let next: @Sendable (String) -> EventLoopFuture<HTTPClient.Response> = { failure in
      self.attempt(
        path, payload, from: index + 1, tried: tried + 1,
        reason: Self.joined(reason, "\(endpoint): \(failure)"), on: eventLoop)
    }
    // The next member's failure is not this one's: it already names every member tried.
    return http.execute(
      request: request, eventLoop: .delegate(on: eventLoop),
      deadline: .now() + .nanoseconds(Self.nanoseconds(requestTimeout))
    )
    .map { Result<HTTPClient.Response, any Error>.success($0) }
    .recover { .failure($0) }
    .flatMap { result in
      switch result {
      case .success(let response)
      where response.status == .serviceUnavailable
        && tried < self.endpoints.count - 1:
        return next("no leader")
      case .success(let response):
        self.preferred.store(index % self.endpoints.count, ordering: .relaxed)
        return eventLoop.makeSucceededFuture(response)
      case .failure(let error):
        return next(Self.describe(error))
      }
    }
  }

  /// Every commit decodes an answer, and every watched change is decoded: the fast decoder, as
  /// Foundation's cost a cluster broker more than the rest of a write.
  private static let decoder = QuickJSONDecoder()

  private static func request(_ url: String) throws -> HTTPClient.Request {
    try HTTPClient.Request(url: url, method: .POST, headers: ["Content-Type": "application/json"])
  }

  private static func joined(_ reasons: String, _ reason: String) -> String {
    reasons.isEmpty ? reason : reasons + "; " + reason
  }

  /// A transport error in a few words: NIO's own text for a refused connection is long and
  /// misleading ("connection reset (error set): Connection refused (errno: 111)").
  private static func describe(_ error: any Error) -> String {
    if let error = error as? HTTPClientError {
      switch error {
      case .deadlineExceeded, .readTimeout: return "no answer in time"
      case .connectTimeout: return "connection timed out"
      case .remoteConnectionClosed: return "connection closed"
      default: break
      }
    }
    if refusedConnection(error) { return "connection refused" }
    if let error = error as? IOError, error.errnoCode == ECONNRESET { return "connection reset" }
    let text = "\(error)"
    // BoringSSL's reason, without the error number and the source path around it.
    if error is NIOSSLError, let reason = text.range(of: "OPENSSL_internal:") {
      let tail = text[reason.upperBound...]
      return "TLS handshake failed (\(tail.prefix { $0 != " " && $0 != "]" }))"
    }
    return text
  }

  private static func refusedConnection(_ error: any Error) -> Bool {
    if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
    if let error = error as? NIOConnectionError {
      return error.connectionErrors.contains { refusedConnection($0.error) }
    }
    return false
  }

  private static func nanoseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
  }

  /// The first key after every key that starts with `prefix`.
  static func prefixEnd(_ prefix: Data) -> Data {
    var end = Array(prefix)
    while let last = end.last {
      if last < 0xFF {
        end[end.count - 1] = last + 1
        return Data(end)
      }
      end.removeLast()
    }
    return Data([0])
  }

  private static func watchBatch(_ line: Data) throws -> EtcdWatchBatch? {
    guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) else { return nil }
    let message: WatchMessage
    do {
      message = try decoder.decode(WatchMessage.self, from: line)
    } catch {
      throw EtcdError.malformed("watch: \(error)")
    }
    if let error = message.error {
      throw EtcdError.refused(status: error.http_code ?? 500, message: error.message ?? "")
    }
    guard let result = message.result else { return nil }
    if let compacted = result.compact_revision.flatMap(Int64.init), compacted > 0 {
      throw EtcdError.compacted(revision: compacted)
    }
    if result.canceled == true {
      throw EtcdError.refused(status: 500, message: result.cancel_reason ?? "watch canceled")
    }
    let changes = try (result.events ?? []).filter { $0.type != "DELETE" }.map {
      try $0.kv.keyValue()
    }
    return EtcdWatchBatch(revision: result.header.revisionNumber, changes: changes)
  }
}

// MARK: - The gateway's JSON (proto3 JSON: 64-bit numbers as strings, defaults left out)

private struct Header: Decodable {
  var revision: String?
  var revisionNumber: Int64 { revision.flatMap(Int64.init) ?? 0 }
}

private struct KeyValueJSON: Decodable {
  var key: String
  var value: String?
  var create_revision: String?
  var mod_revision: String?

  func keyValue() throws -> EtcdKeyValue {
    guard let key = Data(base64Encoded: key), let value = Data(base64Encoded: value ?? "") else {
      throw EtcdError.malformed("a key or value that is not base64")
    }
    return EtcdKeyValue(
      key: key, value: value, createRevision: create_revision.flatMap(Int64.init) ?? 0,
      modRevision: mod_revision.flatMap(Int64.init) ?? 0)
  }
}

private struct RangeAnswer: Decodable {
  var header: Header
  var kvs: [KeyValueJSON]?

  func keyValues() throws -> [EtcdKeyValue] { try (kvs ?? []).map { try $0.keyValue() } }
}

private struct PutAnswer: Decodable {
  var header: Header?
}

private struct LeaseAnswer: Decodable {
  var ID: String?
  var TTL: String?
}

private struct KeepAliveAnswer: Decodable {
  var result: LeaseAnswer?
}

private struct TransactionAnswer: Decodable {
  struct Response: Decodable {
    var response_range: RangeAnswer?
  }
  var header: Header
  var succeeded: Bool?
  var responses: [Response]?
}

private struct WatchMessage: Decodable {
  struct Result: Decodable {
    var header: Header
    var events: [Event]?
    var compact_revision: String?
    var canceled: Bool?
    var cancel_reason: String?
  }
  struct Event: Decodable {
    var type: String?
    var kv: KeyValueJSON
  }
  var result: Result?
  var error: GatewayError?
}

private struct GatewayError: Decodable {
  var message: String?
  var http_code: Int?
}
