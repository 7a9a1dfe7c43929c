import Foundation
import SharedBroker
import SharedBrokerServer
import Sharing
import Testing
import TestSupport

/// `broker --metrics`, scraped from outside as Prometheus would: by HTTP, from another process.
@Suite(.timeLimit(.minutes(1)))
struct MetricsTests {
  /// The metrics page, fetched by Python's urllib.
  private func scrape(_ url: String) async throws -> String {
    let fetched = try await runCommand(
      "/usr/bin/python3",
      ["-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())", url],
      timeout: .seconds(20))
    #expect(fetched.status == 0, "\(fetched.output)")
    return fetched.output
  }

  /// The value of one sample line, e.g. `sharedmirror_broker_requests_total{kind="write"}`.
  private func sample(_ name: String, in page: String) -> Double? {
    page.split(separator: "\n").first { $0.hasPrefix(name + " ") }
      .flatMap { Double($0.split(separator: " ").last ?? "") }
  }

  /// The URL a broker started with `--metrics` printed (after it said it listens).
  private func metricsURL(of broker: ChildProcess) async throws -> String {
    let printed = await broker.waitForOutput(containing: "Metrics listening") ?? broker.printed
    return try #require(
      printed.split(separator: " ").first { $0.hasPrefix("metrics=") }
        .map { String($0.dropFirst("metrics=".count)) })
  }

  /// A client of `router` that made `count` confirmed increments of the key "count".
  private func client(of router: String, incrementing count: Int) async throws -> BrokerClient {
    let client = BrokerClient(endpoint: router)
    let shared = await inProcess(client) { Shared(wrappedValue: 0, .broker("count")) }
    try await client.waitUntilConnected()
    for _ in 0..<count {
      shared.withLock { $0 += 1 }
      try await client.waitUntilConfirmed()
    }
    return client
  }

  @Test func aScrapeDuringARunShowsWhatTheRunDid() async throws {
    let (broker, router, _) = try await startBroker(["--metrics", "127.0.0.1:0"])
    defer { broker.signal(SIGTERM) }
    let url = try await metricsURL(of: broker)
    let client = try await client(of: router, incrementing: 5)
    defer { client.close() }

    // The broker reports a few times a second: scrape until the figures show, a bounded number
    // of times.
    func scrape(until done: (String) -> Bool) async throws -> String {
      var page = ""
      for _ in 0..<50 {
        page = try await self.scrape(url)
        if done(page) { break }
        try await Task.sleep(for: .milliseconds(100))
      }
      return page
    }
    var page = try await scrape(until: { sample("sharedmirror_broker_writes_applied_total", in: $0) == 5 })
    #expect(sample("sharedmirror_broker_writes_applied_total", in: page) == 5, "\(page)")
    #expect(sample(#"sharedmirror_broker_requests_total{kind="write"}"#, in: page) == 5)
    #expect(sample(#"sharedmirror_broker_requests_total{kind="hello"}"#, in: page) ?? 0 >= 1)
    #expect(sample("sharedmirror_broker_keys", in: page) == 1)
    #expect(sample("sharedmirror_broker_clients", in: page) == 1)
    #expect(sample("sharedmirror_broker_connections", in: page) == 1)
    #expect(sample("sharedmirror_broker_received_bytes_total", in: page) ?? 0 > 0)
    #expect(sample("sharedmirror_broker_sent_bytes_total", in: page) ?? 0 > 0)
    #expect(page.contains("# TYPE sharedmirror_broker_writes_applied_total counter"))

    // The client's connection closes; the broker still knows the client until it times out.
    client.close()
    page = try await scrape(until: { sample("sharedmirror_broker_connections", in: $0) == 0 })
    #expect(sample("sharedmirror_broker_connections", in: page) == 0, "\(page)")
    #expect(sample("sharedmirror_broker_clients", in: page) == 1)

    let elsewhere = try await runCommand(
      "/usr/bin/python3",
      ["-c", "import sys, urllib.request\ntry: urllib.request.urlopen(sys.argv[1])\nexcept Exception as e: print(e)",
       url.replacingOccurrences(of: "/metrics", with: "/other")])
    #expect(elsewhere.output.contains("404"), "\(elsewhere.output)")
  }

  @Test func aClusterBrokerReportsItsEtcdCommits() async throws {
    try await withEtcdCluster { etcd in
      let (broker, router, _) = try await startBroker(
        ["--store", etcd.store, "--metrics", "127.0.0.1:0"])
      defer { broker.signal(SIGTERM) }
      let url = try await metricsURL(of: broker)
      let client = try await client(of: router, incrementing: 1)
      defer { client.close() }
      let page = try await scrape(url)
      #expect(sample("sharedmirror_etcd_commit_duration_seconds_count", in: page) ?? 0 >= 1, "\(page)")
      #expect(sample("sharedmirror_etcd_commit_failures_total", in: page) == 0)
    }
  }

  @Test func badOrBusyMetricsEndpointsAreRefusedClearly() async throws {
    let malformed = try await ChildProcess("broker", ["--metrics", "nonsense"])
    #expect(await malformed.waitForExit() == 64)
    #expect(malformed.printed.contains("--metrics (or SHARED_BROKER_METRICS) must be HOST:PORT"))

    let (first, _, _) = try await startBroker(["--metrics", "127.0.0.1:0"])
    defer { first.signal(SIGTERM) }
    let taken = try await metricsURL(of: first).dropFirst("http://".count).prefix { $0 != "/" }
    let second = try await ChildProcess(
      "broker", ["--listen", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*", "--metrics", String(taken)])
    #expect(await second.waitForExit() == 1)
    #expect(
      second.printed.contains("cannot bind the metrics endpoint \(taken): Address already in use"),
      "\(second.printed)")
    #expect(!second.printed.contains("Broker listening"))
  }
}
