import Metrics
import Synchronization

/// The broker's statistics as swift-metrics counters and gauges, for whatever backend the
/// process bootstrapped (`broker --metrics` serves them in Prometheus' text format).
///
/// The broker thread counts in ``BrokerStatistics`` as it always did, and hands a copy here a
/// few times a second: no metric is touched per request, so the hot path stays as it was.
final class BrokerMetrics: Sendable {
  private typealias Field = KeyPath<BrokerStatistics, Int> & Sendable
  private let counters: [(any Field, Counter)]
  private let gauges: [(any Field, Gauge)]
  private let reported = Mutex(BrokerStatistics())

  init() {
    func requests(_ kind: String) -> Counter {
      Counter(label: "sharedmirror_broker_requests_total", dimensions: [("kind", kind)])
    }
    func rejected(_ reason: String) -> Counter {
      Counter(label: "sharedmirror_broker_rejected_requests_total", dimensions: [("reason", reason)])
    }
    func counter(_ name: String) -> Counter { Counter(label: "sharedmirror_broker_\(name)_total") }
    counters = [
      (\.hellos, requests("hello")), (\.pings, requests("ping")), (\.gets, requests("get")),
      (\.syncs, requests("sync")), (\.seeds, requests("seed")), (\.writes, requests("write")),
      (\.malformed, rejected("malformed")), (\.unknownCommands, rejected("unknown_command")),
      (\.invalidKeys, rejected("invalid_key")), (\.oversized, rejected("too_large")),
      (\.withoutHello, rejected("hello_first")), (\.seedingRefusals, rejected("seeding")),
      (\.storageErrors, rejected("storage")), (\.unavailable, rejected("unavailable")),
      (\.forbidden, rejected("forbidden")),
      (\.writesApplied, counter("writes_applied")), (\.writesRejected, counter("writes_rejected")),
      (\.bytesReceived, counter("received_bytes")), (\.bytesSent, counter("sent_bytes")),
      (\.answersDropped, counter("answers_dropped")), (\.seedsAdopted, counter("seeds_adopted")),
      (\.deniedClients, counter("denied_clients")),
      (\.forgottenClients, counter("forgotten_clients")),
      (\.rejectedConnections, counter("rejected_connections")),
    ]
    gauges = [
      (\.clients, Gauge(label: "sharedmirror_broker_clients")),
      (\.activeClients, Gauge(label: "sharedmirror_broker_active_clients")),
      (\.connections, Gauge(label: "sharedmirror_broker_connections")),
      (\.keys, Gauge(label: "sharedmirror_broker_keys")),
      (\.clientCapacity, Gauge(label: "sharedmirror_broker_client_capacity")),
    ]
  }

  /// Adds what was counted since the last call, and records the gauges.
  func report(_ statistics: BrokerStatistics) {
    reported.withLock { last in
      for (path, counter) in counters where statistics[keyPath: path] > last[keyPath: path] {
        counter.increment(by: statistics[keyPath: path] - last[keyPath: path])
      }
      for (path, gauge) in gauges { gauge.record(statistics[keyPath: path]) }
      last = statistics
    }
  }
}
