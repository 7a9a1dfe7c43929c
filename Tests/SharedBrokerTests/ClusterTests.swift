import Dependencies
import Etcd
import Foundation
import Logging
@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer
import SharedBrokerCluster
import SharedBrokerTesting
import Sharing
import Testing
import TestSupport
import ZeroMQ

/// Brokers that share their keys through a real 3-member etcd cluster on loopback: the
/// programs as users run them (`broker --store etcd://…`, `counter --broker a,b`), and a broker
/// in this process where a test needs its counters. `make chaos` runs the fault tests larger
/// (CLUSTER_INCREMENTS).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ClusterTests {
  static var increments: Int {
    ProcessInfo.processInfo.environment["CLUSTER_INCREMENTS"].flatMap(Int.init) ?? 200
  }

  /// Taps in bursts spread over a second or more, so faults land in the middle of them.
  static func script(_ increments: Int, bursts: Int = 10) -> String {
    let burst = max(1, increments / bursts)
    var parts = Array(repeating: "+x\(burst),wait:50", count: increments / burst)
    if increments % burst > 0 { parts.append("+x\(increments % burst)") }
    return parts.joined(separator: ",")
  }

  static func counter(_ brokers: String, key: String, script: String) async throws -> ChildProcess {
    try await ChildProcess(
      "counter",
      ["--broker", brokers, "--key", key, "--script", script, "--print", "json", "--timeout", "60"])
  }

  /// The value a `profile --once` reads through `broker`.
  static func stats(at broker: String, key: String) async throws -> String {
    let profile = try await ChildProcess(
      "profile", ["--broker", broker, "--key", key, "--once", "--print", "json"])
    #expect(await profile.waitForExit() == 0, "\(profile.printed)")
    return profile.printed.split(separator: "\n").last.map(String.init) ?? ""
  }

  static func instance(_ broker: ChildProcess) -> String? {
    broker.printed.split(separator: " ").first { $0.hasPrefix("instance=") }.map(String.init)
  }

  @Test func countersOnDifferentBrokersConvergeExactly() async throws {
    try await withEtcdCluster { etcd in
      let (first, router1, _) = try await startBroker(["--store", etcd.store])
      defer { first.signal(SIGTERM) }
      let (second, router2, _) = try await startBroker(["--store", etcd.store])
      defer { second.signal(SIGTERM) }
      // One cluster, one instance: a client moving between them keeps its versions.
      #expect(Self.instance(first) != nil && Self.instance(first) == Self.instance(second))
      let welcomes = try [router1, router2].map { router -> String? in
        guard case .welcome(let instance, _, _, _, _)? = try RawClient(router, hello: nil).request(.hello(client: "w"))
        else { return nil }
        return instance
      }
      #expect(welcomes[0] != nil && welcomes[0] == welcomes[1])
      #expect(Self.instance(first) == "instance=\(welcomes[0] ?? "")")

      var counters: [ChildProcess] = []
      for router in [router1, router1, router2, router2] {
        counters.append(try await Self.counter(router, key: "converge", script: Self.script(Self.increments)))
      }
      for counter in counters {
        #expect(
          await counter.waitForExit() == 0,
          "\(counter.printed.suffix(300))\nbrokers:\n\(first.printed.suffix(2000))\n\(second.printed.suffix(2000))")
      }
      let total = 4 * Self.increments
      for router in [router1, router2] {
        let final = try await Self.stats(at: router, key: "converge")
        #expect(final == #"{"count":\#(total),"maxCount":\#(total),"minCount":0,"numberOfCounts":\#(total)}"#)
      }
      // SIGTERM ends a broker of a cluster as it ends a single one (it once hung, waiting for
      // the etcd client's shutdown on a thread the shutdown needed).
      for broker in [first, second] {
        broker.signal(SIGTERM)
        #expect(await broker.waitForExit() == 0, "\(broker.printed.suffix(500))")
      }
    }
  }

  /// An etcd that speaks TLS and checks client certificates (`--client-cert-auth`): two brokers
  /// given its authority, a certificate and a key share a key (100 taps through one read as 100
  /// through the other). A broker without them, or with a certificate etcd does not trust, or
  /// trusting another authority, exits 1 at once (within 10 s) saying TLS or the certificate.
  @Test func brokersReachATLSEtcdWithClientCertificates() async throws {
    try await withEtcdCluster(members: 1, tls: true) { etcd in
      let tls = try #require(etcd.clientTLS)
      let (ca, certificate, key) = (
        tls.caCertificateFile, try #require(tls.certificateFile), try #require(tls.privateKeyFile)
      )
      let flags = [
        "--store", etcd.store, "--etcd-cacert", ca, "--etcd-cert", certificate, "--etcd-key", key,
      ]
      let (first, router1, _) = try await startBroker(flags)
      defer { first.signal(SIGTERM) }
      let (second, router2, _) = try await startBroker(flags)
      defer { second.signal(SIGTERM) }
      let counter = try await Self.counter(router1, key: "tls", script: "+x100")
      #expect(await counter.waitForExit() == 0, "\(counter.printed.suffix(500))")
      let final = try await Self.stats(at: router2, key: "tls")
      #expect(final.hasPrefix(#"{"count":100,"#), "\(final)")

      let stranger = etcd.directory.appendingPathComponent("stranger")
      let made = try await runCommand(
        "/bin/sh", [repositoryFile("Scripts/etcd_certificates.sh").path, stranger.path])
      try #require(made.status == 0, "\(made.output)")
      let refusals: [([String], String)] = [
        ([], "if etcd speaks TLS, give --etcd-cacert"),
        (["--etcd-cacert", ca], "etcd closed the TLS connection"),
        (
          [
            "--etcd-cacert", ca, "--etcd-cert", stranger.appendingPathComponent("broker.pem").path,
            "--etcd-key", stranger.appendingPathComponent("broker-key.pem").path,
          ], "refused this broker's (--etcd-cert, --etcd-key)"
        ),
        (
          [
            "--etcd-cacert", stranger.appendingPathComponent("ca.pem").path, "--etcd-cert",
            certificate, "--etcd-key", key,
          ], "TLS handshake failed (CERTIFICATE_VERIFY_FAILED)"
        ),
      ]
      for (extra, expected) in refusals {
        let started = ContinuousClock.now
        let broker = try await ChildProcess(
          "broker", ["--listen", "tcp://127.0.0.1:*", "--store", etcd.store] + extra)
        #expect(await broker.waitForExit() == 1, "\(broker.printed)")
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(broker.printed.contains(expected), "\(broker.printed)")
      }
    }
  }

  /// The etcd member a broker watches through dies between writes through another broker: the
  /// watch resumes after the last revision it delivered, and the broker publishes every version,
  /// in order, none missing (a subscriber that missed one would otherwise resync quietly).
  /// Short-lived `counter` processes, one after another, through a broker whose records expire
  /// after a tenth of a second (each process takes longer than that to start): every tap
  /// counts, and the key's record in etcd keeps only the clients that wrote it lately, not every
  /// process that ever did. A broker killed before them leaves its record of whom it heard,
  /// which the live broker deletes once it is two timeouts old.
  @Test func shortLivedCountersLeaveABoundedRecord() async throws {
    try await withEtcdCluster { etcd in
      let client = try EtcdClient(endpoints: etcd.clientURLs)
      defer { Task { try? await client.shutdown() } }
      let heard = Data("/sharedmirror/keys/\u{1}heard/".utf8)
      func heardRecords() async throws -> Int { try await client.range(heard, prefix: true).keyValues.count }
      let (killed, _, _) = try await startBroker(["--store", etcd.store, "--client-timeout", "0.1"])
      let deadline = ContinuousClock.now + .seconds(10)
      while try await heardRecords() == 0, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      #expect(try await heardRecords() == 1)
      killed.signal(SIGKILL)
      _ = await killed.waitForExit()

      let (broker, router, _) = try await startBroker(
        ["--store", etcd.store, "--client-timeout", "0.1"])
      defer { broker.signal(SIGTERM) }
      let processes = 16
      for _ in 0..<processes {
        let counter = try await Self.counter(router, key: "short-lived", script: "+")
        #expect(await counter.waitForExit() == 0, "\(counter.printed.suffix(300))")
      }
      let final = try await Self.stats(at: router, key: "short-lived")
      #expect(final.hasPrefix(#"{"count":\#(processes),"#), "\(final)")
      // Only the live broker's own record is left.
      let cleared = ContinuousClock.now + .seconds(10)
      while try await heardRecords() != 1, ContinuousClock.now < cleared {
        try await Task.sleep(for: .milliseconds(20))
      }
      #expect(try await heardRecords() == 1)
      let (_, stored) = try await client.range(Data("/sharedmirror/keys/short-lived".utf8))
      let record = try ClusterRecord(decoding: try #require(stored.first).value)
      #expect(record.entry.lastWrites.count < processes, "\(record.entry.written ?? [:])")
      #expect(record.entry.written?.count == record.entry.lastWrites.count)
    }
  }

  @Test func aCutWatchResumesWithoutMissingAnUpdate() async throws {
    try await withEtcdCluster { etcd in
      let first = try await ClusterBroker(etcd)
      defer { first.stop() }
      let (second, router2, publisher2) = try await startBroker(["--store", etcd.store])
      defer { second.signal(SIGTERM) }
      let context = try Context()
      defer { context.terminate() }
      let subscriber = try Socket(context: context, type: .sub)
      defer { subscriber.close() }
      try subscriber.set(.receiveTimeout, 10_000)
      try subscriber.set(.subscribe, Array(BrokerMessage.topic(of: "cut")))
      try subscriber.connect(publisher2)
      let syncing = try RawClient(router2, hello: "watcher")
      var synced = false
      while !synced {
        try syncing.socket.send(BrokerMessage.sync(client: "watcher", key: "cut").frames)
        try subscriber.set(.receiveTimeout, 50)
        while let frames = try subscriber.receive() {
          if case .synced? = try? BrokerMessage(published: frames) { synced = true }
        }
      }
      try subscriber.set(.receiveTimeout, 10_000)

      let writer = BrokerClient(endpoint: first.router)
      defer { writer.close() }
      let count = withDependencies {
        $0.brokerClient = writer
        $0.persistentReferences = PersistentReferences()
      } operation: { Shared(wrappedValue: 0, .broker("cut")) }
      try await writer.waitUntilConnected()
      let writes = 20
      for index in 1...writes {
        // Both brokers talk to the first member first: its death cuts the second one's watch.
        if index == writes / 2 { await etcd.kill(0) }
        count.withLock { $0 += 1 }
        try await writer.waitUntilConfirmed(timeout: .seconds(30))
      }
      var versions: [UInt64] = []
      while versions.last != UInt64(writes), let frames = try subscriber.receive() {
        if case .update(_, let version, _, _, _)? = try? BrokerMessage(published: frames) {
          versions.append(version)
        }
      }
      #expect(versions == Array(1...UInt64(writes)), "\(second.printed.suffix(2_000))")
    }
  }

  /// etcd's client hands a watch's changes over in order; a watch that starts before what etcd
  /// compacted away fails with `compacted` (the store then reads every key again), and one whose
  /// task is cancelled ends with `CancellationError`.
  @Test func aWatchDeliversInOrderAndTellsCompactionAndCancellation() async throws {
    try await withEtcdCluster(members: 1) { etcd in
      let client = try EtcdClient(endpoints: etcd.clientURLs)
      defer { Task { try? await client.shutdown() } }
      let key = Data("/watched/k".utf8)
      var revisions: [Int64] = []
      for value in 1...3 {
        revisions.append(
          try await client.transaction(compare: [], success: [.put(key, Data("\(value)".utf8))])
            .revision)
      }
      let (values, seen) = AsyncStream.makeStream(of: String.self)
      let start = revisions[0]
      let watching = Task {
        // A watch that fails ends the stream, so the loop below stops and the failure shows.
        defer { seen.finish() }
        try await client.watch(prefix: Data("/watched/".utf8), from: start) { batch in
          for change in batch.changes { seen.yield(String(decoding: change.value, as: UTF8.self)) }
        }
      }
      var delivered: [String] = []
      for await value in values {
        delivered.append(value)
        if delivered.count == 3 { break }
      }
      #expect(delivered == ["1", "2", "3"])
      watching.cancel()
      if case .failure(let error) = await watching.result {
        #expect(error is CancellationError, "\(error)")
      }

      let (status, output) = try await runCommand(
        "/usr/bin/python3",
        [
          "-c",
          """
          import sys, urllib.request
          urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/v3/kv/compaction", \
            data=('{"revision":"%s"}' % sys.argv[2]).encode(), method="POST"), timeout=10).read()
          """,
          etcd.clientURLs[0], String(revisions[2]),
        ])
      #expect(status == 0, "\(output)")
      // From a compacted revision the watch must fail at once; changes instead end it too (its
      // first batch, which says the watch was created, has none).
      let (batches, delivers) = AsyncStream.makeStream(of: Int.self)
      let fromCompacted = Task {
        defer { delivers.finish() }
        try await client.watch(prefix: Data("/watched/".utf8), from: start) { batch in
          if !batch.changes.isEmpty { delivers.yield(batch.changes.count) }
        }
      }
      for await count in batches {
        Issue.record("a watch from a compacted revision delivered \(count) changes")
        fromCompacted.cancel()
      }
      if case .failure(let error) = await fromCompacted.result {
        if case EtcdError.compacted(let revision) = error {
          #expect(revision == revisions[2])
        } else {
          Issue.record("expected compacted, got \(error)")
        }
      }
    }
  }

  /// A client of one broker sees another broker's writes as they happen, through etcd's watch.
  @Test func writesThroughOneBrokerArePublishedByTheOther() async throws {
    try await withEtcdCluster { etcd in
      let first = try await ClusterBroker(etcd)
      defer { first.stop() }
      let second = try await ClusterBroker(etcd)
      defer { second.stop() }
      let writer = BrokerClient(endpoint: first.router)
      defer { writer.close() }
      let reader = BrokerClient(endpoint: second.router)
      defer { reader.close() }
      let written = withDependencies {
        $0.brokerClient = writer
        $0.persistentReferences = PersistentReferences()
      } operation: { Shared(wrappedValue: 0, .broker("watched")) }
      let read = withDependencies {
        $0.brokerClient = reader
        $0.persistentReferences = PersistentReferences()
      } operation: { SharedReader(wrappedValue: 0, .broker("watched")) }
      try await writer.waitUntilConnected()
      try await reader.waitUntilConnected()
      var values = read.publisher.values.makeAsyncIterator()
      for _ in 0..<20 { written.withLock { $0 += 1 } }
      try await writer.waitUntilConfirmed()
      while let value = await values.next(), value < 20 {}
      #expect(read.wrappedValue == 20)
      // Only the first broker applied writes; the second only published what etcd told it.
      #expect(first.server.statistics.writesApplied >= 1)
      #expect(second.server.statistics.writesApplied == 0)
    }
  }

  /// How many faults a fault test injects: `make chaos` sets CHAOS_RESTARTS.
  static var faults: Int {
    ProcessInfo.processInfo.environment["CHAOS_RESTARTS"].flatMap(Int.init) ?? 2
  }

  /// A reader of `key` through `brokers`, to inject faults as the writes progress.
  static func probe(_ brokers: [String], key: String) -> (BrokerClient, SharedReader<[String: Int]>) {
    let client = BrokerClient(endpoints: brokers)
    let reader = withDependencies {
      $0.brokerClient = client
      $0.persistentReferences = PersistentReferences()
    } operation: { SharedReader(wrappedValue: [String: Int](), .broker(key)) }
    return (client, reader)
  }

  /// Waits until the probe's count reaches `count`.
  static func progress(_ reader: SharedReader<[String: Int]>, reaches count: Int) async {
    var values = reader.publisher.values.makeAsyncIterator()
    while let value = await values.next(), (value["count"] ?? 0) < count {}
  }

  /// The two brokers of a cluster are SIGKILLed in turn, and started again, while four counters
  /// (given both, in both orders) write: each time, their clients move to the other broker, and
  /// every increment is counted once. Afterwards neither broker spins.
  @Test func brokersKilledInTurnWhileCountersWriteTheyFailOver() async throws {
    try await withEtcdCluster { etcd in
      var brokers: [(process: ChildProcess, router: String, publisher: String)] = []
      for _ in 0..<2 { brokers.append(try await startBroker(["--store", etcd.store])) }
      defer { for broker in brokers { broker.process.signal(SIGTERM) } }
      let increments = Self.increments
      let faults = Self.faults
      let lists = ["\(brokers[0].router),\(brokers[1].router)", "\(brokers[1].router),\(brokers[0].router)"]
      var counters: [ChildProcess] = []
      for index in 0..<4 {
        counters.append(
          try await Self.counter(
            lists[index % 2], key: "failover", script: Self.script(increments, bursts: 10 * (faults + 1))))
      }
      let total = 4 * increments
      let (probe, probed) = Self.probe([brokers[0].router, brokers[1].router], key: "failover")
      defer { probe.close() }
      var moved: [Duration] = []
      for fault in 0..<faults {
        // In the middle of the taps: after each further share of them is through.
        await Self.progress(probed, reaches: total * (fault + 1) / (faults + 1))
        let victim = fault % 2
        brokers[victim].process.signal(SIGKILL)
        _ = await brokers[victim].process.waitForExit()
        let killed = ContinuousClock.now
        // The other broker keeps applying the taps of the victim's clients.
        let before = probed.wrappedValue["count"] ?? 0
        if before < total { await Self.progress(probed, reaches: before + 1) }
        moved.append(.now - killed)
        let restarted = try await ChildProcess(
          "broker",
          ["--listen", brokers[victim].router, "--publish", brokers[victim].publisher, "--store", etcd.store,
           "--seed-window", "0"])
        #expect(await restarted.waitForOutput(containing: "Broker listening") != nil)
        brokers[victim].process = restarted
      }
      for counter in counters { #expect(await counter.waitForExit() == 0, "\(counter.printed.suffix(300))") }
      let expected = #"{"count":\#(total),"maxCount":\#(total),"minCount":0,"numberOfCounts":\#(total)}"#
      var lost = 0
      for broker in brokers {
        let final = try await Self.stats(at: broker.router, key: "failover")
        #expect(final == expected)
        lost = max(lost, total - count(in: final))
      }
      print("cluster: \(faults) broker SIGKILLs under 4 counters; the count rose again \(moved) after each")
      print("chaos-row | broker SIGKILL + restart, 2 brokers on etcd (fail-over) | \(faults) | 4 × \(increments) increments | \(lost) |")
      let ticks = brokers.map(\.process.cpuTicks)
      try await Task.sleep(for: .seconds(1))  // a window to measure CPU time in, not a wait for work
      for (broker, before) in zip(brokers, ticks) { #expect(broker.process.cpuTicks - before <= 10) }
    }
  }

  /// Four counters and a probe are given the first broker of a cluster only. Brokers join, and
  /// the ones they were given leave (one stopped, then one SIGKILLed), while the counters write:
  /// each client learns every newcomer from its broker, moves to one when its broker leaves, and
  /// every increment is counted once.
  @Test func clientsGivenOneBrokerFollowTheClusterAsBrokersJoinAndLeave() async throws {
    try await withEtcdCluster { etcd in
      var brokers = [try await startBroker(["--store", etcd.store])]
      var gone: [String] = []
      defer { for broker in brokers { broker.process.signal(SIGTERM) } }
      let first = brokers[0].router
      let increments = Self.increments
      let rounds = 2
      var counters: [ChildProcess] = []
      for _ in 0..<4 {
        counters.append(
          try await Self.counter(first, key: "members", script: Self.script(increments, bursts: 10 * (rounds + 1))))
      }
      let total = 4 * increments
      let (probe, probed) = Self.probe([first], key: "members")
      defer { probe.close() }
      var stalls: [Duration] = []
      for round in 0..<rounds {
        await Self.progress(probed, reaches: total * (round + 1) / (rounds + 1))
        let newcomer = try await startBroker(["--store", etcd.store])
        brokers.append(newcomer)
        // Announced by the broker the clients talk to, within a probe of its registration.
        let deadline = ContinuousClock.now + .seconds(10)
        while !probe.knownBrokers.contains(newcomer.router), ContinuousClock.now < deadline {
          try await Task.sleep(for: .milliseconds(20))
        }
        #expect(probe.knownBrokers.contains(newcomer.router), "\(probe.knownBrokers)")
        // The oldest leaves: stopped (it takes itself off the list), then killed (its lease
        // runs out 5 s later).
        let leaving = brokers.removeFirst()
        leaving.process.signal(round == 0 ? SIGTERM : SIGKILL)
        _ = await leaving.process.waitForExit()
        gone.append(leaving.router)
        let left = ContinuousClock.now
        let before = probed.wrappedValue["count"] ?? 0
        if before < total { await Self.progress(probed, reaches: before + 1) }
        stalls.append(.now - left)
      }
      for counter in counters { #expect(await counter.waitForExit() == 0, "\(counter.printed.suffix(300))") }
      let expected = #"{"count":\#(total),"maxCount":\#(total),"minCount":0,"numberOfCounts":\#(total)}"#
      #expect(try await Self.stats(at: brokers[0].router, key: "members") == expected)
      // The stopped broker is off the list at once; the killed one once its lease ran out.
      let welcome = try RawClient(brokers[0].router, hello: nil).request(.hello(client: "m"))
      guard case .welcome(_, _, _, let listed, _)? = welcome else {
        Issue.record("no WELCOME: \(String(describing: welcome))")
        return
      }
      #expect(!listed.contains(gone[0]) && listed.contains(brokers[0].router), "\(listed)")
      print("cluster-membership: a broker stopped, then one killed, under 4 counters given one broker; the count rose again \(stalls) after each")
    }
  }

  /// etcd's members are SIGKILLed in turn, and started again with their data, while counters
  /// write: the other two keep the quorum, the broker moves to them, and no increment is lost.
  @Test func etcdMembersKilledInTurnTheClusterKeepsAcceptingWrites() async throws {
    try await withEtcdCluster { etcd in
      let (broker, router, _) = try await startBroker(["--store", etcd.store])
      defer { broker.signal(SIGTERM) }
      let increments = Self.increments
      let faults = Self.faults
      var counters: [ChildProcess] = []
      for _ in 0..<2 {
        counters.append(
          try await Self.counter(router, key: "member", script: Self.script(increments, bursts: 10 * (faults + 1))))
      }
      let total = 2 * increments
      let (probe, probed) = Self.probe([router], key: "member")
      defer { probe.close() }
      for fault in 0..<faults {
        await Self.progress(probed, reaches: total * (fault + 1) / (faults + 1))
        let member = fault % etcd.members.count
        await etcd.kill(member)
        let before = probed.wrappedValue["count"] ?? 0
        if before < total { await Self.progress(probed, reaches: before + 1) }
        try await etcd.start(member)
        try await etcd.waitUntilServing()
      }
      for counter in counters { #expect(await counter.waitForExit() == 0, "\(counter.printed.suffix(300))") }
      let final = try await Self.stats(at: router, key: "member")
      #expect(
        final == #"{"count":\#(total),"maxCount":\#(total),"minCount":0,"numberOfCounts":\#(total)}"#,
        "broker: \(broker.printed.suffix(20_000))\ncounters: \(counters.map { $0.printed.suffix(3_000) })")
      print("chaos-row | etcd member SIGKILL + restart under load (3 members) | \(faults) | 2 × \(increments) increments | \(total - count(in: final)) |")
    }
  }

  /// Two of three etcd members gone: no quorum. The broker answers `HELLO`, `PING` and a write
  /// with `unavailable` rather than apply what it cannot store; with the quorum back, the same
  /// write goes through.
  @Test func brokerCutFromEtcdRefusesWrites() async throws {
    try await withEtcdCluster { etcd in
      // A broker process: this test blocks on its socket, and a broker in this process needs a
      // thread of the task pool for each etcd call.
      let (broker, router, _) = try await startBroker(["--store", etcd.store])
      defer { broker.signal(SIGTERM) }
      let raw = try RawClient(router, hello: "raw")
      let write = BrokerMessage.write(
        client: "raw", write: 1, key: "cut", base: 0, value: Data("1".utf8), after: nil)
      await etcd.kill(1)
      await etcd.kill(2)
      let cut = ContinuousClock.now
      // The broker's probe notices within 3.5 s of etcd's last answer.
      var answer: BrokerMessage?
      repeat {
        answer = try raw.request(.ping(versions: []))
      } while answer.map({ if case .pong = $0 { true } else { false } }) ?? false
      print("cluster-timing | quorum lost to PING answered unavailable | \(ContinuousClock.now - cut)")
      guard case .error(.unavailable, _, _, _)? = answer else {
        Issue.record("PING got \(String(describing: answer))")
        return
      }
      guard case .error(.unavailable, _, "cut", 1)? = try raw.request(write) else {
        Issue.record("the write was not refused")
        return
      }
      let ping = try await runCommand(productsDirectory.appendingPathComponent("broker").path, ["ping", router])
      #expect(ping.status == 1, "broker ping must fail while etcd has no quorum")
      #expect(ping.output.contains("answered but is unavailable"), "\(ping.output)")

      try await etcd.start(1)
      try await etcd.start(2)
      try await etcd.waitUntilServing()
      repeat {
        answer = try raw.request(.ping(versions: []))
      } while answer.map({ if case .pong = $0 { false } else { true } }) ?? true
      // Version 1: the refused write was not applied before.
      guard case .ack(_, 1, 1)? = try raw.request(write) else {
        Issue.record("the write did not go through with the quorum back")
        return
      }
    }
  }

  /// The independent Python client, written from PROTOCOL.md, finds the protocol's rules on a
  /// broker of a cluster too, and two of them writing through different brokers lose nothing.
  @Test func foreignClientFindsTheRulesOnAClusterAndWritesThroughBoth() async throws {
    try await withEtcdCluster { etcd in
      let (first, router1, _) = try await startBroker(["--store", etcd.store])
      defer { first.signal(SIGTERM) }
      let (second, router2, _) = try await startBroker(["--store", etcd.store])
      defer { second.signal(SIGTERM) }
      let script = repositoryFile("Scripts/protocol_client.py").path
      let rules = try await runCommand("/usr/bin/python3", [script, router2, "--check-rules"])
      #expect(rules.status == 0, "python3 said: \(rules.output)")
      #expect(rules.output.contains("rules: 21 checked"), "\(rules.output)")

      async let one = runCommand("/usr/bin/python3", [script, router1, "foreign", "count", "5"])
      async let other = runCommand("/usr/bin/python3", [script, router2, "foreign", "count", "7"])
      let results = try await [one, other]
      for result in results { #expect(result.status == 0, "python3 said: \(result.output)") }
      let final = try await runCommand("/usr/bin/python3", [script, router1, "foreign", "count", "0"])
      #expect(final.output.split(separator: "\n").last == #"{"count":12}"#, "\(final.output)")
    }
  }

  /// Every broker restarted against an empty etcd (its data lost): the clients' copies seed it
  /// back, as they seed a single broker restarted without `--data`, and their taps go on top.
  @Test func emptiedEtcdIsSeededBackByTheClients() async throws {
    let etcd = try await EtcdCluster(members: 1)
    let first = try await ClusterBroker(etcd, seedWindow: .seconds(1))
    let client = BrokerClient(endpoints: [first.router])
    defer { client.close() }
    let count = withDependencies {
      $0.brokerClient = client
      $0.persistentReferences = PersistentReferences()
    } operation: { Shared(wrappedValue: 0, .broker("seeded")) }
    try await client.waitUntilConnected()
    for _ in 0..<5 { count.withLock { $0 += 1 } }
    try await client.waitUntilConfirmed()
    first.stop()
    await etcd.shutdown()

    let fresh = try await EtcdCluster(members: 1)
    let second = try await ClusterBroker(fresh, seedWindow: .seconds(1), on: first.endpoints)
    defer { second.stop() }
    #expect(second.instance != first.instance)
    for _ in 0..<3 { count.withLock { $0 += 1 } }
    try await client.waitUntilConfirmed(timeout: .seconds(20))
    #expect(count.wrappedValue == 8)
    #expect(second.server.statistics.seedsAdopted == 1)
    second.stop()
    await fresh.shutdown()
  }
}

/// A broker in this process on an etcd cluster, on loopback ports it can be restarted on.
final class ClusterBroker: Sendable {
  let server: BrokerServer
  let endpoints: RestartableEndpoints
  let instance: String
  var router: String { endpoints.router }
  var publisher: String { endpoints.publisher }

  /// - Parameter endpoints: Where to listen (new ports below the ephemeral range otherwise).
  init(_ etcd: EtcdCluster, seedWindow: Duration = .zero, on endpoints: RestartableEndpoints? = nil) async throws {
    let store = try await EtcdBrokerStore.connect(endpoints: etcd.clientURLs)
    instance = store.instance
    func start(_ endpoints: RestartableEndpoints) throws -> (BrokerServer, RestartableEndpoints) {
      let server = BrokerServer(
        configuration: BrokerConfiguration(
          listen: endpoints.router, publish: endpoints.publisher, seedWindow: seedWindow),
        cluster: store)
      try server.start()
      return (server, endpoints)
    }
    (server, self.endpoints) = try endpoints.map(start) ?? RestartableEndpoints.bind(start)
  }

  func stop() { server.stop() }
}

/// The `count` of a `--print json` line, or -1.
private func count(in line: String) -> Int {
  (try? JSONDecoder().decode([String: Int].self, from: Data(line.utf8)))?["count"] ?? -1
}
