import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import ServiceLifecycle

/// `broker --metrics HOST:PORT`: serves the process's metrics in Prometheus' text format at
/// `GET /metrics`, over HTTP/1.1, until the broker shuts down.
final class MetricsEndpoint: Service {
  private let channel: any Channel
  /// Where it listens, as a scraper would ask for it.
  let url: String

  private init(channel: any Channel, url: String) {
    self.channel = channel
    self.url = url
  }

  /// Binds the endpoint.
  ///
  /// - Throws: What the system said when `host:port` cannot be bound.
  static func bind(host: String, port: Int, registry: PrometheusCollectorRegistry) async throws
    -> MetricsEndpoint
  {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { channel in
        channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
          channel.pipeline.addHandler(MetricsHandler(registry: registry))
        }
      }
      .bind(host: host, port: port).get()
    let bound = channel.localAddress?.port ?? port
    let shown = host.contains(":") ? "[\(host)]" : host
    return MetricsEndpoint(channel: channel, url: "http://\(shown):\(bound)/metrics")
  }

  /// What a failed bind says, without NIO's call site: "Address already in use".
  static func describe(_ error: any Error) -> String {
    if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
    return "\(error)"
  }

  /// Serves until the broker shuts down, then closes the listening socket.
  func run() async throws {
    try? await gracefulShutdown()
    try? await channel.close()
  }
}

/// Answers `GET /metrics` with the registry's text, anything else with 404 or 405.
private final class MetricsHandler: ChannelInboundHandler, @unchecked Sendable {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  private let registry: PrometheusCollectorRegistry
  private var request: HTTPRequestHead?

  init(registry: PrometheusCollectorRegistry) {
    self.registry = registry
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      request = head
    case .body:
      break
    case .end:
      guard let head = request else { return }
      request = nil
      let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
      let (status, body): (HTTPResponseStatus, [UInt8]) =
        switch (head.method, path) {
        case (.GET, "/metrics"): (.ok, registry.emitToBuffer())
        case (_, "/metrics"): (.methodNotAllowed, Array("only GET\n".utf8))
        default: (.notFound, Array("the metrics are at /metrics\n".utf8))
        }
      var headers = HTTPHeaders()
      headers.add(
        name: "Content-Type",
        value: status == .ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
      headers.add(name: "Content-Length", value: "\(body.count)")
      if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
      context.write(
        wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
        promise: nil)
      context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
      let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
      if !head.isKeepAlive {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.whenComplete { _ in bound.value.close(promise: nil) }
      }
    }
  }
}
