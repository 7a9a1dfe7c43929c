import Foundation
import Synchronization
import Testing

/// The deterministic simulation: many seeds, each a different schedule of faults (see
/// ``Simulation``). `SIM_SEEDS` sets how many (`make chaos` runs a million), `SIM_FIRST_SEED`
/// where they start, and `SIM_SEED` replays one seed with its trace.
@Suite struct SimulationTests {
  @Test func everyScheduleSettlesWithEachConfirmedMutationOnce() async throws {
    let environment = ProcessInfo.processInfo.environment
    if let replay = environment["SIM_SEED"].flatMap(UInt64.init) {
      let simulation = Simulation(seed: replay, tracing: true)
      defer { print(simulation.trace.joined(separator: "\n")) }
      _ = try simulation.run()
      return
    }
    let count = environment["SIM_SEEDS"].flatMap(UInt64.init) ?? 10_000
    let first = environment["SIM_FIRST_SEED"].flatMap(UInt64.init) ?? 1
    let workers = UInt64(max(1, ProcessInfo.processInfo.activeProcessorCount))
    let clock = ContinuousClock()
    let start = clock.now
    // Plain threads, not tasks: CPU-bound seeds on the cooperative pool (one thread per core)
    // would starve every other test of the run.
    let results = await withCheckedContinuation { continuation in
      let summaries = Mutex<[Summary]>([])
      for worker in 0..<workers {
        Thread {
          var summary = Summary()
          var seed = first + worker
          while seed < first + count {
            summary.add(seed: seed)
            seed += workers
          }
          let all = summaries.withLock { summaries in
            summaries.append(summary)
            return summaries.count == Int(workers) ? summaries : nil
          }
          if let all {
            continuation.resume(returning: all.reduce(into: Summary()) { $0.merge($1) })
          }
        }.start()
      }
    }
    let elapsed = start.duration(to: clock.now)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(
      "simulation: \(results.seeds) seeds in \(String(format: "%.1f", seconds)) s "
        + "(\(Int(Double(results.seeds) / seconds)) seeds/s), \(results.events) events, "
        + "\(results.mutations) mutations, \(results.faults) faults, \(results.restarts) broker restarts, "
        + "\(results.failedHandshakes) handshakes closed, \(results.settledOwnUpdates) own updates "
        + "dropped undecoded, \(results.droppedOwnUpdates) dropped at the publisher, \(results.impostorsRefused) HELLOs with another key's client id refused, "
        + "\(results.keysRevoked) client keys taken off the allow-lists for a while, "
        + "\(results.keysMadeReadOnly) made read-only on a key for a while "
        + "(\(results.mutationsRefused) mutations refused and undone), "
        + "\(results.quietEnds) worlds whose users stopped writing before the faults stopped, "
        + "\(results.clustered) worlds of 2 or 3 brokers on a simulated etcd (\(results.expiredRecords) "
        + "client records expired, etcd judged unavailable \(results.unavailableVerdicts) times, \(results.movesToLearned) moves to a "
        + "broker a client learned of); settled at worst \(results.worstSettle) after the faults stopped; \(results.failures.count) failed"
    )
    // A row of `make chaos`'s table.
    print(
      "chaos-row | deterministic simulation: messages lost and delayed, writes delivered twice, "
        + "connections cut, handshakes closed, PUB drops, broker restarts with, without and with cut data, clients "
        + "killed, clocks that jump; in clusters: brokers killed, etcd answers lost after applying, "
        + "transactions applied late, retries that find their own put, elections, a broker cut from "
        + "etcd, history compacted, clients given one broker that learn the others | \(results.faults) faults, \(results.restarts) broker restarts "
        + "| \(results.seeds) seeds, \(results.mutations) mutations | \(results.failures.count) seeds failed |"
    )
    if let failure = results.failures.min(by: { $0.seed < $1.seed }) {
      let replay = Simulation(seed: failure.seed, tracing: true)
      _ = try? replay.run()
      Issue.record(
        """
        \(failure) (\(results.failures.count) seeds failed; replay with SIM_SEED=\(failure.seed))
        \(results.failures.sorted { $0.seed < $1.seed }.prefix(10).map(\.description).joined(separator: "\n"))
        \(replay.trace.suffix(60).joined(separator: "\n"))
        """
      )
    }
  }
}

/// What a worker's seeds did.
private struct Summary: Sendable {
  var seeds = 0
  var events = 0
  var mutations = 0
  var faults = 0
  var restarts = 0
  var clustered = 0
  var quietEnds = 0
  var expiredRecords = 0
  var unavailableVerdicts = 0
  var movesToLearned = 0
  var failedHandshakes = 0
  var settledOwnUpdates = 0
  var droppedOwnUpdates = 0
  var impostorsRefused = 0
  var keysRevoked = 0
  var keysMadeReadOnly = 0
  var mutationsRefused = 0
  var worstSettle = Duration.zero
  var failures: [Simulation.Failure] = []

  mutating func add(seed: UInt64) {
    seeds += 1
    do {
      let outcome = try Simulation(seed: seed).run()
      events += outcome.events
      mutations += outcome.mutations
      faults += outcome.faults
      restarts += outcome.restarts
      if outcome.clustered { clustered += 1 }
      if outcome.quietEnd { quietEnds += 1 }
      expiredRecords += outcome.expiredRecords
      unavailableVerdicts += outcome.unavailableVerdicts
      movesToLearned += outcome.movesToLearned
      failedHandshakes += outcome.failedHandshakes
      settledOwnUpdates += outcome.settledOwnUpdates
      droppedOwnUpdates += outcome.droppedOwnUpdates
      impostorsRefused += outcome.impostorsRefused
      keysRevoked += outcome.keysRevoked
      keysMadeReadOnly += outcome.keysMadeReadOnly
      mutationsRefused += outcome.mutationsRefused
      worstSettle = max(worstSettle, outcome.settled)
    } catch let failure as Simulation.Failure {
      failures.append(failure)
    } catch {
      failures.append(Simulation.Failure(seed: seed, reason: "\(error)"))
    }
  }

  mutating func merge(_ other: Summary) {
    seeds += other.seeds
    events += other.events
    mutations += other.mutations
    faults += other.faults
    restarts += other.restarts
    clustered += other.clustered
    quietEnds += other.quietEnds
    expiredRecords += other.expiredRecords
    unavailableVerdicts += other.unavailableVerdicts
    movesToLearned += other.movesToLearned
    failedHandshakes += other.failedHandshakes
    settledOwnUpdates += other.settledOwnUpdates
    droppedOwnUpdates += other.droppedOwnUpdates
    impostorsRefused += other.impostorsRefused
    keysRevoked += other.keysRevoked
    keysMadeReadOnly += other.keysMadeReadOnly
    mutationsRefused += other.mutationsRefused
    worstSettle = max(worstSettle, other.worstSettle)
    failures += other.failures
  }
}
