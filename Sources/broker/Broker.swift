import ArgumentParser
import CurveCommandLine
import Etcd
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SharedBroker
import SharedBrokerCluster
import SharedBrokerServer
import UnixSignals
import ZeroMQ

/// The SharedMirror broker: keeps the last value of every key and mirrors it to every client.
@main
struct Broker: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "broker",
    abstract: "Mirror @Shared(.broker) values between processes.",
    // The generated line ends in `<subcommand>`, though plain `broker` runs the broker.
    usage: """
      broker [--listen <endpoint>] [--publish <endpoint>] [--data <dir> | --store <etcd://...>] [<options>]
      broker ping [<endpoint>] [--timeout <seconds>] [--curve-server-key <key>] [--curve-key-file <file>]
      broker keygen <prefix> [--force]
      """,
    discussion: """
      Clients connect a DEALER to --listen and a SUB to the next port (see PROTOCOL.md). \
      With --data, every accepted write is logged before it is acknowledged, so a restart \
      (even after SIGKILL) loses no confirmed write. With --curve-secret-file and \
      --allow-keys, every connection is encrypted and only listed client keys get in, each \
      limited to the keys its line names (read=PATTERNS, write=PATTERNS; SIGHUP reloads the file). \
      With --store etcd://HOST:PORT[,HOST:PORT...], several brokers share their keys through \
      etcd; a client given one of them learns the others (each registers --advertise) and \
      moves to another when its own fails.
      """,
    version: SharedMirrorRelease.description,
    subcommands: [Keygen.self, Ping.self]
  )

  static func main() async {
    await main(CurveClientOptions.commandLine(Array(CommandLine.arguments.dropFirst())))
  }

  @Option(help: "The ROUTER endpoint clients connect to (env SHARED_BROKER_LISTEN).")
  var listen = ProcessInfo.processInfo.environment["SHARED_BROKER_LISTEN"] ?? "tcp://0.0.0.0:5555"

  @Option(help: "The PUB endpoint (default: the listen port + 1).")
  var publish: String?

  @Option(
    name: .customLong("data"),
    help: "Directory for the write log and snapshot (env SHARED_BROKER_DATA)."
  )
  var dataOption: String?

  @Option(
    name: .customLong("store"),
    help: ArgumentHelp(
      "Share the keys with other brokers through etcd (env SHARED_BROKER_STORE).",
      valueName: "etcd://HOST:PORT[,HOST:PORT...]")
  )
  var storeOption: String?

  @Option(
    name: .customLong("advertise"),
    help: ArgumentHelp(
      "With --store: the ROUTER endpoint the cluster's clients reach this broker at, which they learn from any broker of the cluster (env SHARED_BROKER_ADVERTISE; default: --listen with a wildcard host replaced by this machine's name).",
      valueName: "tcp://HOST:PORT")
  )
  var advertiseOption: String?

  @Option(
    name: .customLong("etcd-cacert"),
    help: ArgumentHelp(
      "With --store: speak TLS to etcd, trusting the certificate authority in this PEM file (etcdctl's --cacert; env SHARED_BROKER_ETCD_CACERT).",
      valueName: "file"))
  var etcdCACertOption: String?

  @Option(
    name: .customLong("etcd-cert"),
    help: ArgumentHelp(
      "With --etcd-cacert: the broker's client certificate (PEM), for an etcd that checks them (--client-cert-auth; env SHARED_BROKER_ETCD_CERT).",
      valueName: "file"))
  var etcdCertOption: String?

  @Option(
    name: .customLong("etcd-key"),
    help: ArgumentHelp(
      "With --etcd-cert: its private key (PEM; env SHARED_BROKER_ETCD_KEY).", valueName: "file"))
  var etcdKeyOption: String?

  /// `--etcd-cert`, else the environment's.
  var etcdCert: String? {
    etcdCertOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_ETCD_CERT"]
  }

  /// `--etcd-key`, else the environment's.
  var etcdKey: String? {
    etcdKeyOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_ETCD_KEY"]
  }

  /// How to speak TLS to etcd (`--etcd-cacert`, else the environment's, with `--etcd-cert` and
  /// `--etcd-key`), or `nil` for plain HTTP.
  var etcdTLS: EtcdTLS? {
    let caCertificate =
      etcdCACertOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_ETCD_CACERT"]
    return caCertificate.map {
      EtcdTLS(caCertificateFile: $0, certificateFile: etcdCert, privateKeyFile: etcdKey)
    }
  }

  /// `--advertise`, else the environment's.
  var advertise: String? {
    advertiseOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_ADVERTISE"]
  }

  /// `--store`, else the environment's.
  var store: String? { storeOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_STORE"] }

  /// `--data`, else the environment's.
  var data: String? { dataOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_DATA"] }

  // Unconditional: "-5" is a bad value, not a missing one.
  @Option(parsing: .unconditional, help: "The largest value accepted, in bytes.")
  var maxValueSize = 1 << 20

  @Option(
    parsing: .unconditional,
    help:
      "Seconds a client may stay silent before the broker forgets it (its heartbeats keep it alive)."
  )
  var clientTimeout: Double = 3600

  @Option(
    parsing: .unconditional,
    help:
      "Seconds after start to collect clients' copies of keys this broker lost, before writes to them go through."
  )
  var seedWindow: Double = 3

  @Option(
    parsing: .unconditional,
    help:
      "The most updates queued for one subscriber that does not read; it misses the rest and resyncs."
  )
  var maxQueuedUpdates = 1_000

  @Option(
    name: .customLong("metrics"),
    help: ArgumentHelp(
      "Serve Prometheus metrics at http://HOST:PORT/metrics (env SHARED_BROKER_METRICS); off unless given.",
      valueName: "HOST:PORT")
  )
  var metricsOption: String?

  /// `--metrics`, else the environment's.
  var metrics: String? {
    metricsOption ?? ProcessInfo.processInfo.environment["SHARED_BROKER_METRICS"]
  }

  /// `--metrics` split into host and port (`[::1]:9555` for IPv6), or nil when malformed.
  static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (0...65_535).contains(port)
    else { return nil }
    var host = text[..<colon]
    if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
    guard !host.isEmpty, !host.contains("/") else { return nil }
    return (String(host), port)
  }

  @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
  var logLevel = "info"

  @Option(help: "File holding the broker's CURVE secret key (Z85); enables encryption.")
  var curveSecretFile: String?

  @Option(
    help: ArgumentHelp(
      "File listing the client public keys allowed in, one a line: PUBLIC_KEY [read=PATTERNS] [write=PATTERNS] (* matches any run of characters; SIGHUP reads it again).",
      valueName: "file"))
  var allowKeys: String?

  func validate() throws {
    guard Logger.Level(rawValue: logLevel) != nil else {
      let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
      throw ValidationError("Unknown log level \"\(logLevel)\": use one of \(levels).")
    }
    // Within what libzmq's message size limit (this + 64 KiB) holds without overflowing.
    guard (1...(1 << 30)).contains(maxValueSize) else {
      throw ValidationError("--max-value-size must be from 1 to 1073741824 (1 GiB).")
    }
    // Beyond about 31 years a duration overflows.
    guard clientTimeout > 0, clientTimeout <= 1_000_000_000 else {
      throw ValidationError(
        "--client-timeout must be a positive number of seconds, at most 1000000000.")
    }
    guard seedWindow >= 0, seedWindow <= 3600 else {
      throw ValidationError("--seed-window must be a number of seconds from 0 to 3600.")
    }
    guard (1...Int(Int32.max)).contains(maxQueuedUpdates) else {
      throw ValidationError("--max-queued-updates must be from 1 to 2147483647.")
    }
    if let advertise, !BrokerClient.isEndpoint(advertise[...], binding: false) {
      throw ValidationError(
        "--advertise (or SHARED_BROKER_ADVERTISE) must be an endpoint clients can connect to, such as tcp://broker2:5555, not \"\(advertise)\"."
      )
    }
    if advertise != nil, store == nil {
      throw ValidationError("--advertise goes with --store: only a cluster's brokers are listed.")
    }
    for (flag, endpoint) in [
      ("--listen (or SHARED_BROKER_LISTEN)", listen), ("--publish", publish),
    ] {
      guard let endpoint, !BrokerClient.isEndpoint(endpoint[...], binding: true) else { continue }
      throw ValidationError(
        "\(flag) must be an endpoint such as tcp://0.0.0.0:5555 or ipc:///tmp/broker, not \"\(endpoint)\"."
      )
    }
    if let store {
      guard EtcdBrokerStore.endpoints(fromStore: store) != nil else {
        throw ValidationError(
          "--store (or SHARED_BROKER_STORE) must be etcd://HOST:PORT[,HOST:PORT...], not \"\(store)\"."
        )
      }
      guard data == nil else {
        throw ValidationError("--store and --data do not go together: etcd keeps the data.")
      }
    }
    if let metrics, Self.hostAndPort(metrics) == nil {
      throw ValidationError(
        "--metrics (or SHARED_BROKER_METRICS) must be HOST:PORT, e.g. 127.0.0.1:9555, not \"\(metrics)\"."
      )
    }
    guard (etcdCert == nil) == (etcdKey == nil) else {
      throw ValidationError("--etcd-cert and --etcd-key go together.")
    }
    guard etcdCert == nil || etcdTLS != nil else {
      throw ValidationError("--etcd-cert needs --etcd-cacert, the authority etcd's certificates come from.")
    }
    guard etcdTLS == nil || store != nil else {
      throw ValidationError("--etcd-cacert, --etcd-cert and --etcd-key go with --store.")
    }
    guard (curveSecretFile == nil) == (allowKeys == nil) else {
      throw ValidationError("--curve-secret-file and --allow-keys go together.")
    }
  }

  /// Reads the CURVE settings from their files, failing with a clear message.
  private func curveSecurity() throws -> BrokerConfiguration.CurveSecurity? {
    guard let curveSecretFile, let allowKeys else { return nil }
    let secret: String
    do {
      secret = try CurveKeyPair(secretKeyFile: curveSecretFile).secretKey
    } catch {
      throw ValidationError("Cannot use --curve-secret-file \(error).")
    }
    do {
      return BrokerConfiguration.CurveSecurity(
        secretKey: secret, allowList: try Self.allowList(at: allowKeys))
    } catch {
      throw ValidationError("Cannot use --allow-keys \(error).")
    }
  }

  /// What to try when etcd cannot be used, where the error points at TLS.
  static func etcdHint(for error: String, tls: Bool) -> String? {
    if error.contains("CERTIFICATE_VERIFY_FAILED") {
      return "etcd's certificate is not from the authority in --etcd-cacert, or names another host"
    }
    if error.contains("WRONG_VERSION_NUMBER") {
      return "etcd does not speak TLS there: drop --etcd-cacert, or start etcd with TLS"
    }
    guard error.contains("connection closed") || error.contains("connection reset") else {
      return nil
    }
    return tls
      ? "etcd closed the TLS connection: it checks client certificates (--client-cert-auth) and "
        + "refused this broker's (--etcd-cert, --etcd-key), or got none"
      : "if etcd speaks TLS, give --etcd-cacert (with --etcd-cert and --etcd-key when etcd checks "
        + "client certificates)"
  }

  /// Reads an allow-list file; the error names the file, and the line for one that does not parse.
  static func allowList(at path: String) throws -> AllowList {
    let text = try CurveKeyPair.text(ofKeyFile: path)
    do {
      return try AllowList(parsing: text)
    } catch {
      throw CurveKeyFileError(path: path, reason: error.description)
    }
  }

  /// Reads the allow-list again on every `SIGHUP` and hands it to the broker, logging what
  /// changed; a file that does not parse leaves the list in force, with an error in the log.
  private static func reloadAllowList(
    from path: String, into server: BrokerServer, _ signals: UnixSignalsSequence,
    logger: Logger
  ) async {
    for await _ in signals {
      let list: AllowList
      do {
        list = try allowList(at: path)
      } catch {
        // The file is named once, beside the error.
        let reason = (error as? CurveKeyFileError)?.reason ?? "\(error)"
        logger.error(
          "Kept the allow-list in force: the file cannot be used",
          metadata: ["file": "\(path)", "error": "\(reason)"])
        continue
      }
      // Most likely a file caught while an editor writes it: denying everyone takes a restart.
      guard !list.entries.isEmpty else {
        logger.error(
          "Kept the allow-list in force: the file lists no key (to deny every client, stop the broker)",
          metadata: ["file": "\(path)"])
        continue
      }
      guard let changes = server.reloadAllowList(list) else { continue }
      logger.info(
        "Reloaded the allow-list",
        metadata: [
          "file": "\(path)", "keys": "\(list.entries.count)",
          "added": "\(changes.added.map { "\($0) \(list.entries[$0]!)" })",
          "removed": "\(changes.removed)",
          "changed": "\(changes.changed.map { "\($0) \(list.entries[$0]!)" })",
        ])
    }
  }

  func run() async throws {
    // A full disk or a file-size limit must fail the write (and be answered), not kill us.
    signal(SIGXFSZ, SIG_IGN)
    // Trapped before anything binds: a SIGTERM right after "Broker listening" stops the broker
    // gracefully, where the service group would trap it only once it runs.
    let stopSignals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
    // Trapped too, whether or not there is an allow-list to reload: a SIGHUP must not kill it.
    let reloadSignals = await UnixSignalsSequence(trapping: .sighup)
    let level = Logger.Level(rawValue: logLevel) ?? .info
    LoggingSystem.bootstrap { label in
      var handler = StreamLogHandler.standardOutput(label: label)
      handler.logLevel = level
      return handler
    }
    let logger = Logger(label: "broker")
    let files = BrokerServer.raiseOpenFileLimit()
    if files.after > files.before {
      logger.info(
        "Raised the open-file limit", metadata: ["from": "\(files.before)", "to": "\(files.after)"])
    }
    let configuration = BrokerConfiguration(
      listen: listen, publish: publish,
      dataDirectory: data.map { URL(fileURLWithPath: $0, isDirectory: true) },
      maxValueSize: maxValueSize,
      curve: try curveSecurity(),
      clientTimeout: .seconds(clientTimeout),
      seedWindow: .seconds(seedWindow),
      maxQueuedUpdates: maxQueuedUpdates,
      advertise: advertise
    )
    // Bootstrapped before the broker and the store make their counters (those made earlier count
    // nowhere); bound before the broker's endpoints and announced after them, so a busy port
    // fails the start before the broker listens, and a failed start announces no metrics.
    var metricsEndpoint: MetricsEndpoint?
    if let metrics, let (host, port) = Self.hostAndPort(metrics) {
      let registry = PrometheusCollectorRegistry()
      MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
      do {
        metricsEndpoint = try await MetricsEndpoint.bind(host: host, port: port, registry: registry)
      } catch {
        FileHandle.standardError.write(
          Data(
            "broker: error: cannot bind the metrics endpoint \(metrics): \(MetricsEndpoint.describe(error))\n"
              .utf8))
        throw ExitCode.failure
      }
    }
    let server: BrokerServer
    do {
      if let store, let endpoints = EtcdBrokerStore.endpoints(fromStore: store, tls: etcdTLS != nil)
      {
        let etcd: EtcdBrokerStore
        do {
          etcd = try await EtcdBrokerStore.connect(
            endpoints: endpoints, logger: logger, tls: etcdTLS)
        } catch {
          throw BrokerStartError.clusterStore(
            store, error, hint: Self.etcdHint(for: "\(error)", tls: etcdTLS != nil))
        }
        server = BrokerServer(configuration: configuration, cluster: etcd, logger: logger)
      } else {
        server = BrokerServer(configuration: configuration, logger: logger)
      }
      try server.start()
    } catch {
      // Not a usage error: the flags were fine, the system refused (a busy port, a bad --data).
      FileHandle.standardError.write(Data("broker: error: \(error)\n".utf8))
      throw ExitCode.failure
    }
    if let metricsEndpoint {
      logger.info("Metrics listening", metadata: ["metrics": "\(metricsEndpoint.url)"])
    }
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: [.init(service: server)] + (metricsEndpoint.map { [.init(service: $0)] } ?? []),
        logger: logger
      )
    )
    try await withThrowingDiscardingTaskGroup { tasks in
      tasks.addTask {
        for await _ in stopSignals { await group.triggerGracefulShutdown() }
      }
      tasks.addTask { [allowKeys] in
        if let allowKeys {
          await Self.reloadAllowList(
            from: allowKeys, into: server, reloadSignals, logger: logger)
        } else {
          for await _ in reloadSignals {
            logger.info("SIGHUP: nothing to reload (no --allow-keys)")
          }
        }
      }
      try await group.run()
      tasks.cancelAll()
    }
  }
}

/// `broker keygen PREFIX`: writes a CURVE key pair as PREFIX.key (secret) and PREFIX.pub.
struct Keygen: ParsableCommand {
  static let configuration = CommandConfiguration(
    abstract: "Write a CURVE key pair (Z85) for the broker or a client."
  )

  @Argument(help: "Writes PREFIX.key (secret, mode 600) and PREFIX.pub (public).")
  var prefix: String

  @Flag(help: "Replace an existing PREFIX.key and PREFIX.pub.")
  var force = false

  // A broker's replaced key locks out every client configured with the old public one.
  func validate() throws {
    let paths = [prefix + ".key", prefix + ".pub"]
    if !force, let path = paths.first(where: FileManager.default.fileExists) {
      throw ValidationError("\(path) already exists; keep it, or replace the pair with --force.")
    }
    let directory = URL(fileURLWithPath: prefix).deletingLastPathComponent().path
    guard FileManager.default.isWritableFile(atPath: directory) else {
      throw ValidationError("Cannot write into \(directory): no such directory, or not writable.")
    }
  }

  func run() throws {
    let pair = try CurveKeyPair.generate()
    let secret = URL(fileURLWithPath: prefix + ".key")
    try (pair.secretKey + "\n").write(to: secret, atomically: true, encoding: .utf8)
    try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
    try (pair.publicKey + "\n").write(
      to: URL(fileURLWithPath: prefix + ".pub"), atomically: true, encoding: .utf8
    )
    print(pair.publicKey)
  }
}
