import Foundation
import TestSupport
import Testing

/// A broker that answers a counter at once but holds its taps back: its data holds the key
/// `stats` (count 2, written by a first run), and it starts again with a seed window of 60 s,
/// in which a key not yet written in this run may still take clients' copies. Long enough that
/// a loaded machine does everything a test needs well inside it.
///
/// - Parameter arguments: Extra arguments for the second run (e.g. `--metrics`).
/// - Returns: The second run's process and ROUTER endpoint, and the data directory (the caller
///   removes it).
func startBrokerHoldingWrites(
  _ arguments: [String] = []
) async throws -> (process: ChildProcess, router: String, data: URL) {
  let data = FileManager.default.temporaryDirectory.appendingPathComponent("holding-\(UUID())")
  let (first, firstRouter, _) = try await startBroker(["--data", data.path])
  let writer = try await ChildProcess("counter", ["--broker", firstRouter, "--script", "+x2"])
  let written = await writer.waitForExit()
  first.signal(SIGTERM)
  _ = await first.waitForExit()
  try #require(written == 0, "\(writer.printed)")
  let (broker, router, _) = try await startBroker(
    ["--data", data.path, "--seed-window", "60"] + arguments)
  return (broker, router, data)
}

/// The broker's metrics page, fetched by Python's urllib as Prometheus would.
func scrapeMetrics(_ url: String) async throws -> String {
  try await runCommand(
    "/usr/bin/python3",
    [
      "-c",
      "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
      url,
    ],
    timeout: .seconds(20)
  ).output
}

/// The URL of the metrics page a broker started with `--metrics` printed.
func metricsURL(of broker: ChildProcess) async -> String? {
  let printed = await broker.waitForOutput(containing: "Metrics listening") ?? broker.printed
  return printed.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("metrics=") }
    .map { String($0.dropFirst("metrics=".count)) }
}

/// The value of one sample line of a metrics page, e.g.
/// `sharedmirror_broker_rejected_requests_total{reason="seeding"}`.
func sample(_ name: String, in page: String) -> Double? {
  page.split(separator: "\n").first { $0.hasPrefix(name + " ") }
    .flatMap { Double($0.split(separator: " ").last ?? "") }
}

/// The object a JSON line holds, or `nil` when the line is not one.
func jsonObject(_ line: some StringProtocol) -> [String: Any]? {
  (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
}
