import ArgumentParser
import AsyncHTTPClient
import CurveCommandLine
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import SharedBroker
import SharedBrokerProtocol
import ZeroMQ

/// `web`: serves the page and a WebSocket per tab; each tab is a client of the broker of its
/// own (see ``TabRelay`` and ``WebFraming``).
@main
struct Web: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "web",
    abstract: "Serves the SharedMirror page: browser tabs share the count with the terminal programs.",
    version: SharedMirrorRelease.description
  )

  @Option(help: "The broker's endpoint, or a cluster's brokers separated by commas (env SHARED_BROKER_URL).")
  var broker = ProcessInfo.processInfo.environment["SHARED_BROKER_URL"] ?? "tcp://127.0.0.1:5555"

  @Option(help: "Where to serve the page, HOST:PORT.")
  var listen = "127.0.0.1:8080"

  @Option(
    name: .customLong("allow-origin"),
    help: "A page origin (scheme://host:port) whose tabs may connect, besides the front's own; repeatable.")
  var allowedOrigins: [String] = []

  @Option(
    name: .customLong("broker-metrics"),
    help: "The broker's metrics, HOST:PORT as `broker --metrics` serves them, for the page's inspector (env SHARED_BROKER_METRICS_URL).")
  var brokerMetricsOption: String?

  /// `--broker-metrics`, else the environment's.
  var brokerMetrics: String? {
    brokerMetricsOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_METRICS_URL"]
  }

  @OptionGroup var curve: CurveClientOptions

  func validate() throws {
    guard brokers.allSatisfy({ BrokerClient.isEndpoint($0[...]) }) else {
      throw ValidationError(
        "--broker (or SHARED_BROKER_URL) must be a broker's endpoint, such as "
          + "tcp://127.0.0.1:5555, or several separated by commas, not \"\(broker)\".")
    }
    if let origin = allowedOrigins.first(where: { !OriginCheck.isOrigin($0) }) {
      throw ValidationError(
        "--allow-origin must be an origin as a browser sends it, scheme://host[:port] such as "
          + "http://localhost:3000, not \"\(origin)\".")
    }
    guard Self.address(listen) != nil else {
      throw ValidationError("--listen must be HOST:PORT, such as 127.0.0.1:8080, not \"\(listen)\".")
    }
    if let brokerMetrics, Self.metricsAddress(brokerMetrics) == nil {
      throw ValidationError(
        "--broker-metrics (or SHARED_BROKER_METRICS_URL) must be HOST:PORT, such as 127.0.0.1:9555, "
          + "or the URL the broker's \"Metrics listening\" line names, not \"\(brokerMetrics)\".")
    }
  }

  /// `--broker` split: each tab starts at the first and moves along them.
  private var brokers: [String] {
    broker.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
  }

  static func main() async {
    await main(CurveClientOptions.commandLine(Array(CommandLine.arguments.dropFirst())))
  }

  func run() async throws {
    let logger = Logger(label: "web")
    let credentials = try curve.credentials()
    let context = try Context()
    let (host, port) = Self.address(listen)!
    let origins = OriginCheck(allowed: Set(allowedOrigins))
    let socketRouter = Router(context: BasicWebSocketRequestContext.self)
    socketRouter.ws("/ws") { request, _ in
      let origin = request.headers[.origin]
      guard origins.allows(origin, host: request.head.authority) else {
        logger.warning(
          "Refused a page of another origin (--allow-origin admits it)",
          metadata: ["origin": "\(origin ?? "")"])
        return .dontUpgrade
      }
      return .upgrade([:])
    } onUpgrade: { inbound, outbound, _ in
      let relay = try TabRelay(
        context: context, brokers: brokers, credentials: credentials, logger: logger)
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          for await message in relay.outbound {
            try await outbound.write(.text(WebFraming.text(message)))
          }
        }
        defer { relay.close() }
        for try await message in inbound.messages(maxSize: WebFraming.maxMessageBytes) {
          guard case .text(let text) = message else {
            let refused = WebFraming.RefusedFrame(.badRequest, "send text messages, not binary ones")
            try await outbound.write(.text(WebFraming.text(refused.reply)))
            continue
          }
          switch WebFraming.request(text) {
          case .success(let request): relay.send(request)
          case .failure(let refused): try await outbound.write(.text(WebFraming.text(refused.reply)))
          }
        }
      }
    }
    let router = Router()
    router.get("/") { _, _ in Self.page(PackageResources.index_html, "text/html; charset=utf-8") }
    router.get("/shared-mirror.js") { _, _ in
      Self.page(PackageResources.shared_mirror_js, "text/javascript; charset=utf-8")
    }
    router.get("/app.js") { _, _ in Self.page(PackageResources.app_js, "text/javascript; charset=utf-8") }
    router.get("/style.css") { _, _ in Self.page(PackageResources.style_css, "text/css; charset=utf-8") }
    let metricsURL = brokerMetrics.flatMap(Self.metricsAddress).map { "http://\($0)/metrics" }
    router.get("/inspect") { _, _ in try await Self.inspect(metricsURL) }
    let app = Application(
      router: router,
      server: .http1WebSocketUpgrade(
        webSocketRouter: socketRouter,
        configuration: .init(ws: .init(maxFrameSize: WebFraming.maxMessageBytes))),
      configuration: .init(address: .hostname(host, port: port), serverName: "sharedmirror-web"),
      onServerRunning: { channel in
        // With port 0 the system picked one: the line names it.
        let bound = channel.localAddress?.port ?? port
        let named = host.contains(":") ? "[\(host)]" : host
        logger.info(
          "Serving the page", metadata: ["url": "http://\(named):\(bound)/", "broker": "\(broker)"])
      },
      logger: logger
    )
    do {
      try await app.runService()
    } catch let error as IOError {
      // NIO's description names the system call, not the address.
      throw ServeError(
        description: "cannot serve on \(listen): \(String(cString: strerror(error.errnoCode)))")
    } catch is SocketAddressError, is SocketAddressError.UnknownHost {
      throw ServeError(description: "cannot serve on \(listen): no such address on this machine")
    }
    context.terminate()
  }

  /// The broker's figures for the inspector, as JSON: `{"broker": {...}, "metrics": URL}`, or
  /// `{"problem": "..."}` when there are none to show (no `--broker-metrics`, or the broker's
  /// metrics do not answer).
  private static func inspect(_ metricsURL: String?) async throws -> Response {
    struct Inspection: Encodable {
      var broker: BrokerFigures?
      /// Where the figures come from: in a cluster, one broker's.
      var metrics: String?
      var problem: String?
    }
    var inspection = Inspection(metrics: metricsURL)
    if let metricsURL {
      do {
        let response = try await HTTPClient.shared.execute(
          HTTPClientRequest(url: metricsURL), timeout: .seconds(2))
        let body = try await response.body.collect(upTo: 1 << 20)
        inspection.broker = BrokerFigures(prometheus: String(buffer: body))
        if response.status != .ok || inspection.broker == nil {
          inspection.problem = "\(metricsURL) answered \(response.status.code) without the broker's figures"
        }
      } catch {
        inspection.problem = "the broker's metrics at \(metricsURL) do not answer"
      }
    } else {
      inspection.problem = "start web with --broker-metrics to see the broker's clients and writes"
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return page(Array(try encoder.encode(inspection)), "application/json")
  }

  private static func page(_ bytes: [UInt8], _ type: String) -> Response {
    Response(
      status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
      body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
  }

  /// `--broker-metrics` as HOST:PORT: given so, or as `http://HOST:PORT[/metrics]`.
  static func metricsAddress(_ text: String) -> String? {
    var address = Substring(text)
    if address.hasPrefix("http://") { address = address.dropFirst("http://".count) }
    if address.hasSuffix("/metrics") { address = address.dropLast("/metrics".count) }
    if address.hasSuffix("/") { address = address.dropLast() }
    return Self.address(String(address)) == nil ? nil : String(address)
  }

  /// `HOST:PORT` split, or `nil` (for a URL such as `tcp://host:port` too); an IPv6 host may
  /// be written in brackets, as in a URL (`[::1]:8080`).
  static func address(_ text: String) -> (host: String, port: Int)? {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (0...65_535).contains(port), colon > text.startIndex, !text.contains("/")
    else { return nil }
    var host = text[..<colon]
    if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
    return host.isEmpty ? nil : (String(host), port)
  }
}

/// Why `web` could not serve its page.
struct ServeError: Error, CustomStringConvertible {
  let description: String
}
