import Foundation
import Testing
import ZeroMQ

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

/// The client's machine event by event: each step feeds one event at one time and expects the
/// actions, in order. No threads, sockets or storage.
@Suite struct ClientMachineTests {
  let t0 = Moment.now
  let heartbeat = Duration.milliseconds(500)
  let hello = ClientAction.send(.hello(client: "me"))
  let welcome = ClientEvent.reply(
    .welcome(instance: "run", publisher: "tcp://*:5556", maxValueSize: 10))

  /// The SUB connecting to the publisher the first WELCOME names, on broker `a`.
  let subscribe = ClientAction.connectSubscriber(to: "tcp://a:5556", from: nil)

  /// A machine given broker `a`, or the cluster of `a` and `b`.
  func machine(heartbeat: Duration? = nil, cluster: Bool = false) -> ClientMachine {
    ClientMachine(
      id: "me",
      brokers: BrokerList(given: cluster ? ["tcp://a:5555", "tcp://b:5555"] : ["tcp://a:5555"]),
      heartbeat: heartbeat ?? self.heartbeat, missedHeartbeats: 3, maxWritesInFlight: 2, now: t0)
  }

  /// What a cluster's client does when it moves from `a` to `b`.
  var moveToB: [ClientAction] {
    [
      .connectDealer(to: "tcp://b:5555", from: "tcp://a:5555"),
      .disconnectSubscriber(from: "tcp://a:5556"), hello,
    ]
  }

  /// One event, at `after` past `t0`, and the actions it must make.
  struct Step {
    var event: ClientEvent
    var after: Duration = .zero
    var expected: [ClientAction]
  }

  func run(_ steps: [Step], on machine: inout ClientMachine, line: Int = #line) {
    for (number, step) in steps.enumerated() {
      let actions = machine.handle(step.event, at: t0 + step.after)
      #expect(
        actions == step.expected, "step \(number + 1): \(step.event)",
        sourceLocation: SourceLocation(
          fileID: #fileID, filePath: #filePath, line: line, column: 1))
    }
  }

  /// The mail of a new key `k`, valued `0`.
  let addK = ClientEvent.mail([.added(index: 0, epoch: 1, key: "k", initialValue: KeyValue(0))])

  /// The mail of the user's mutation `sequence` of `k`, which made it `value`.
  func mutated(_ sequence: UInt64, _ value: Int) -> ClientEvent {
    .mail([.mutated(index: 0, epoch: 1, sequence: sequence, value: KeyValue(value))])
  }

  /// A machine with the key `k` in sync at version 1 (value `0`).
  func synced() -> ClientMachine {
    var machine = machine()
    _ = machine.handle(addK, at: t0)
    _ = machine.handle(.turn, at: t0)
    _ = machine.handle(welcome, at: t0)
    _ = machine.handle(.turn, at: t0)
    _ = machine.handle(.published([.synced(key: "k", client: "me")]), at: t0)
    _ = machine.handle(
      .reply(.snapshot(key: "k", version: 1, lastWrite: 0, value: Data("0".utf8), writes: [:])),
      at: t0)
    _ = machine.rebased(
      machine.rebaseDue(0)!.result(decoded: .success(KeyValue(0)), local: KeyValue(0), through: 0))
    return machine
  }

  /// Mutation 1 of `k` (to `1`), and the encoding its turn asks for.
  func encodeRequest(on machine: inout ClientMachine) -> KeyMachine.Encode? {
    _ = machine.handle(mutated(1, 1), at: t0)
    guard case .encode(let request)? = machine.handle(.turn, at: t0).last else {
      Issue.record("expected an encoding")
      return nil
    }
    return request
  }

  /// Mutation 1 of `k`, sent as a write of `1`: its encoding request.
  func sentWrite(on machine: inout ClientMachine) -> KeyMachine.Encode? {
    guard let request = encodeRequest(on: &machine) else { return nil }
    _ = machine.encoded(request, .success(Data("1".utf8)), at: t0)
    return request
  }

  /// The driver's list, still holding the last event's actions: the next event's are appended
  /// after them, each of its once-only actions once among its own.
  @Test func actionsAreAppendedToTheOwnersList() {
    var machine = machine()
    var list: [ClientAction] = [.turn, .progressed]
    machine.handle(.turn, at: t0, into: &list)
    machine.handle(welcome, at: t0, into: &list)
    #expect(list == [.turn, .progressed, hello, subscribe, .connection(.connected), .progressed])
  }

  /// Updates read in one batch ask for one rebase per key and one `progressed`, for keys past
  /// the 64th too.
  @Test func aBatchAsksOnceForEachKey() {
    var machine = machine()
    let keys = (0..<66).map { "k\($0)" }
    _ = machine.handle(
      .mail(
        keys.enumerated().map {
          .added(index: $0, epoch: 1, key: $1, initialValue: KeyValue(0))
        }), at: t0)
    _ = machine.handle(.turn, at: t0)
    _ = machine.handle(welcome, at: t0)
    _ = machine.handle(.turn, at: t0)
    for key in [3, 65] {
      _ = machine.handle(.published([.synced(key: keys[key], client: "me")]), at: t0)
      _ = machine.handle(
        .reply(
          .snapshot(key: keys[key], version: 1, lastWrite: 0, value: Data("0".utf8), writes: [:])),
        at: t0)
      _ = machine.rebased(
        machine.rebaseDue(key)!.result(
          decoded: .success(KeyValue(0)), local: KeyValue(0), through: 0))
    }
    func update(_ key: Int, _ version: UInt64) -> BrokerMessage {
      .update(
        key: keys[key], version: version, client: "you", write: version,
        value: Data("\(version)".utf8))
    }
    let actions = machine.handle(
      .published([update(3, 2), update(65, 2), update(3, 3), update(65, 3)]), at: t0)
    #expect(actions.filter { $0 == .rebase(3) }.count == 1)
    #expect(actions.filter { $0 == .rebase(65) }.count == 1)
    #expect(actions.filter { $0 == .progressed }.count == 1)
  }

  // MARK: - The connection

  @Test func handshakeHeartbeatsAndSilence() {
    var machine = machine()
    run(
      [
        Step(event: .turn, expected: [hello]),
        // HELLO is retried quickly at first, not before.
        Step(event: .turn, after: .microseconds(100), expected: []),
        Step(event: .turn, after: .microseconds(600), expected: [hello]),
        Step(
          event: welcome, after: .milliseconds(1),
          expected: [subscribe, .connection(.connected), .progressed]),
        Step(event: .turn, after: .milliseconds(1), expected: []),
        Step(event: .turn, after: .milliseconds(600), expected: [.send(.ping(versions: []))]),
        // Three heartbeats without an answer: the broker is lost.
        Step(
          event: .turn, after: .milliseconds(1_700),
          expected: [.log(.brokerStoppedAnswering), .connection(.disconnected), hello]),
      ], on: &machine)
  }

  @Test func answersFromAnotherRunOrRefusalsStartOver() {
    var machine = machine(cluster: true)
    run(
      [
        Step(event: welcome, expected: [subscribe, .connection(.connected), .progressed]),
        Step(event: .reply(.pong(instance: "other", behind: [])), expected: [hello]),
        Step(event: welcome, expected: [.connection(.connected), .progressed]),
        Step(event: .reply(.error(code: .helloFirst, message: "", key: nil, write: nil)), expected: [hello]),
        Step(event: welcome, expected: [.connection(.connected), .progressed]),
        Step(
          event: .reply(.error(code: .unavailable, message: "", key: nil, write: nil)),
          expected: [.brokerUnavailable("tcp://a:5555"), .connection(.disconnected)] + moveToB),
        Step(
          event: .reply(.hello(client: "x")), expected: [.log(.requestFromTheBroker)]),
      ], on: &machine)
  }

  @Test func aDroppedConnectionIsReportedAtOnceAndTheNextOneSaysHello() {
    let lostA = ClientEvent.dealer(.init(kind: .disconnected, endpoint: "tcp://a:5555"))
    let handshake = ClientEvent.dealer(.init(kind: .handshakeSucceeded, endpoint: "tcp://a:5555"))
    var machine = machine()
    run(
      [
        Step(event: handshake, expected: [.handshake(nil), hello]),
        Step(event: welcome, expected: [subscribe, .connection(.connected), .progressed]),
        // The broker's process ended: no heartbeat needs to go unanswered first.
        Step(event: lostA, expected: [.connection(.disconnected)]),
        // Nothing is taken for the old run, and nothing reports "connected" meanwhile.
        Step(event: .reply(.pong(instance: "run", behind: [])), expected: [hello]),
        // The new connection may reach another run: HELLO at once, not at the next heartbeat.
        Step(event: handshake, expected: [.handshake(nil), hello]),
        Step(event: welcome, expected: [.connection(.connected), .progressed]),
        // A DEALER that cannot queue a message counts as a lost connection.
        Step(event: .sendFailed, expected: [.connection(.disconnected)]),
      ], on: &machine)
    // In a cluster the client moves at once; the old broker's connection closing after a move
    // is no news, and the SUB follows the new broker's WELCOME.
    machine = self.machine(cluster: true)
    run(
      [
        Step(event: handshake, expected: [.handshake(nil), hello]),
        Step(event: welcome, expected: [subscribe, .connection(.connected), .progressed]),
        Step(event: lostA, expected: [.connection(.disconnected)] + moveToB),
        Step(event: lostA, expected: []),
        Step(
          event: welcome,
          expected: [
            .connectSubscriber(to: "tcp://b:5556", from: nil), .connection(.connected), .progressed,
          ]),
      ], on: &machine)
  }

  @Test func aFailedHandshakeIsReportedUntilOneSucceeds() {
    var machine = machine()
    func dealer(_ kind: SocketMonitor.Kind, _ value: UInt32 = 0) -> ClientEvent {
      .dealer(.init(kind: kind, value: value, endpoint: "tcp://a:5555"))
    }
    /// Whether each handshake report of the event is permanent (`nil`: it succeeded).
    func reports(_ event: ClientEvent) -> [Bool?] {
      machine.handle(event, at: t0).compactMap { action -> Bool?? in
        guard case .handshake(let failure) = action else { return nil }
        return .some(failure?.isPermanent)
      }
    }
    // Closed before the handshake ends: a broker away, until it happens three times in a row.
    #expect(reports(dealer(.connected)) == [])
    #expect(reports(dealer(.disconnected)) == [false])
    #expect(reports(dealer(.disconnected)) == [false])
    #expect(reports(dealer(.disconnected)) == [true])
    #expect(reports(dealer(.disconnected)) == [])
    #expect(reports(dealer(.handshakeSucceeded)) == [nil])
    // A refused key is permanent at once, and the closes that follow do not hide it.
    let refused = machine.handle(dealer(.handshakeFailedAuth, 400), at: t0)
    #expect(
      refused == [
        .handshake(
          .init(
            reason: HandshakeHistory.Problem.keyRefused(status: 400).description,
            isPermanent: true))
      ])
    #expect(reports(dealer(.disconnected)) == [])
    #expect(reports(dealer(.handshakeSucceeded)) == [nil])
  }

  @Test func slowHeartbeatsKeepRetriesShort() {
    var machine = machine(heartbeat: .seconds(2), cluster: true)
    var steps = [Step(event: .turn, expected: [hello])]
    // HELLO retries double up to 500 ms, not up to the heartbeat.
    var retry = ClientMachine.firstRetry * 2
    var at = Duration.zero
    while retry < .milliseconds(500) {
      at += retry
      steps.append(Step(event: .turn, after: at, expected: [hello]))
      retry *= 2
    }
    steps += [
      Step(event: .turn, after: at + .milliseconds(499), expected: []),
      Step(event: .turn, after: at + .milliseconds(500), expected: [hello]),
      // No broker answered for 3 retry intervals: try the next one.
      Step(
        event: .turn, after: .milliseconds(1_501),
        expected: [.connectDealer(to: "tcp://b:5555", from: "tcp://a:5555"), hello]),
    ]
    run(steps, on: &machine)

    machine = self.machine(heartbeat: .seconds(2))
    run(
      [
        Step(event: welcome, expected: [subscribe, .connection(.connected), .progressed]),
        Step(event: .turn, after: .milliseconds(1_999), expected: [.send(.ping(versions: []))]),
        Step(event: .turn, after: .milliseconds(3_000), expected: []),
        Step(event: .turn, after: .milliseconds(3_999), expected: [.send(.ping(versions: []))]),
        // Silent for 3 heartbeats, 6 s: lost.
        Step(event: .turn, after: .milliseconds(5_999), expected: [.send(.ping(versions: []))]),
        Step(
          event: .turn, after: .milliseconds(6_001),
          expected: [.log(.brokerStoppedAnswering), .connection(.disconnected), hello]),
      ], on: &machine)
  }

  // MARK: - A key

  @Test func aKeySyncsBeforeItWrites() {
    var machine = machine()
    run(
      [
        Step(event: addK, expected: [.subscribe("k")]),
        Step(event: .turn, expected: [hello]),
        Step(event: welcome, expected: [subscribe, .connection(.syncing), .progressed]),
        Step(event: .turn, expected: [.send(.sync(client: "me", key: "k"))]),
        // Another client's SYNCED is not ours.
        Step(event: .published([.synced(key: "k", client: "you")]), expected: []),
        Step(
          event: .published([.synced(key: "k", client: "me")]),
          expected: [.send(.get(client: "me", key: "k"))]),
        Step(
          event: .reply(
            .snapshot(key: "k", version: 4, lastWrite: 0, value: Data("7".utf8), writes: [:])),
          expected: [.notify(0), .rebase(0), .progressed, .connection(.connected)]),
      ], on: &machine)
    let rebase = machine.rebaseDue(0)
    #expect(rebase?.undecoded == Data("7".utf8))
    #expect(rebase?.confirmedThrough == 0)
    let actions = machine.rebased(
      rebase!.result(decoded: .success(KeyValue(7)), local: KeyValue(7), through: 0))
    #expect(actions == [.notify(0)])
    #expect(machine.keys[0].local == KeyValue(7))
    #expect(machine.keys[0].isSynced)
  }

  @Test func writesAreEncodedOutsideThenSentAndAcknowledged() {
    var machine = synced()
    _ = machine.handle(
      .mail([
        .mutated(index: 0, epoch: 1, sequence: 1, value: KeyValue(1)),
        .mutated(index: 0, epoch: 1, sequence: 2, value: KeyValue(2)),
      ]), at: t0)
    let turn = machine.handle(.turn, at: t0 + .milliseconds(1))
    guard case .encode(let request)? = turn.last else {
      Issue.record("expected an encoding, got \(turn)")
      return
    }
    #expect(request.value == KeyValue(2))
    #expect(
      machine.encoded(request, .success(Data("2".utf8)), at: t0 + .milliseconds(1)) == [
        .send(
          .write(
            client: "me", write: request.id, key: "k", base: 1, value: Data("2".utf8), after: nil,
            quiet: true)),
        .progressed,
      ])
    #expect(machine.keys[0].writesInFlight == 1)
    run(
      [
        Step(
          event: .reply(.ack(key: "k", write: request.id, version: 2)),
          expected: [.confirmed(key: 0, through: 2), .progressed])
      ], on: &machine)
    #expect(!machine.keys[0].hasUnconfirmedWrites)
    #expect(machine.keys[0].version == 2)
  }

  /// A write goes out quiet (the broker sends no `ACK` when it applies it): its own update
  /// settles it.
  @Test func aQuietWriteIsSettledByItsOwnUpdate() {
    var machine = synced()
    guard let request = sentWrite(on: &machine) else { return }
    let own = BrokerMessage.update(
      key: "k", version: 2, client: "me", write: request.id, value: Data("1".utf8))
    #expect(
      machine.handle(.published([own]), at: t0) == [.confirmed(key: 0, through: 1), .progressed])
    #expect(machine.keys[0].writesInFlight == 0)
    #expect(machine.keys[0].version == 2)
  }

  /// Should the PUB socket drop a quiet write's update, a `PONG` that shows the broker ahead
  /// asks for the key's state once the write went out a retry interval before (until then, its
  /// update may still be on its way), and the snapshot's `lastWrite` settles it.
  @Test func aQuietWriteWhoseUpdateIsLostIsSettledByASnapshot() {
    var machine = synced()
    guard let request = sentWrite(on: &machine) else { return }
    let ahead = ClientEvent.reply(.pong(instance: "run", behind: [KeyVersion(key: "k", version: 2)]))
    let soon = t0 + .milliseconds(100)
    _ = machine.handle(ahead, at: soon)
    let early = machine.handle(.turn, at: soon)
    #expect(!early.contains(.send(.get(client: "me", key: "k"))), "\(early)")
    let late = t0 + heartbeat
    _ = machine.handle(ahead, at: late)
    let asked = machine.handle(.turn, at: late)
    #expect(asked.contains(.send(.get(client: "me", key: "k"))), "\(asked)")
    let answered = machine.handle(
      .reply(.snapshot(key: "k", version: 2, lastWrite: request.id, value: Data("1".utf8))),
      at: late)
    #expect(answered.contains(.confirmed(key: 0, through: 1)), "\(answered)")
    #expect(machine.keys[0].writesInFlight == 0)
    #expect(!machine.keys[0].hasUnconfirmedWrites)
  }

  /// A writer's own update that comes after its ACK changes nothing: the I/O thread may drop it
  /// undecoded, and fed to the machine all the same, it makes no action. One that comes first,
  /// another writer's, or one the writer's record does not cover yet is taken in.
  @Test func anOwnUpdateAfterItsAckIsSettled() {
    var machine = synced()
    guard let request = sentWrite(on: &machine) else { return }
    func isSettled(_ frames: [Data]) -> Bool { machine.isSettledOwnUpdate(FrameBuffer(frames)) }
    let own = BrokerMessage.update(
      key: "k", version: 2, client: "me", write: request.id, value: Data("1".utf8))
    #expect(!isSettled(own.frames), "before its ACK, it confirms the write")
    _ = machine.handle(.reply(.ack(key: "k", write: request.id, version: 2)), at: t0)
    #expect(isSettled(own.frames))
    #expect(machine.handle(.published([own]), at: t0).isEmpty)
    let other = BrokerMessage.update(
      key: "k", version: 2, client: "you", write: 1, value: Data("1".utf8))
    #expect(!isSettled(other.frames))
    let sameLength = BrokerMessage.update(
      key: "k", version: 2, client: "mf", write: request.id, value: Data("1".utf8))
    #expect(!isSettled(sameLength.frames), "an id of the same length, one byte apart")
    let later = BrokerMessage.update(
      key: "k", version: 2, client: "me", write: request.id + 1, value: Data("1".utf8))
    #expect(!isSettled(later.frames), "its record would move on")
    let unknownKey = BrokerMessage.update(
      key: "j", version: 2, client: "me", write: request.id, value: Data("1".utf8))
    #expect(!isSettled(unknownKey.frames))
    var malformed = own.frames
    malformed[2] = Data("02".utf8)
    #expect(!isSettled(malformed))
    #expect(!isSettled(Array(own.frames.dropLast())))
  }

  /// The broker restarts as `run2` without the key: the client offers its copy (`SEED`), which
  /// is refused to its key (`forbidden`). Returns the refusal's actions.
  func refuseCopy(on machine: inout ClientMachine) -> [ClientAction] {
    _ = machine.handle(.reply(.pong(instance: "run2")), at: t0)
    _ = machine.handle(
      .reply(.welcome(instance: "run2", publisher: "tcp://*:5556", maxValueSize: 10)), at: t0)
    _ = machine.handle(.turn, at: t0)
    let asked = machine.handle(.published([.synced(key: "k", client: "me")]), at: t0)
    guard case .send(.seed)? = asked.first else {
      Issue.record("expected a SEED, got \(asked)")
      return []
    }
    return machine.handle(
      .reply(.error(code: .forbidden, message: "not writable", key: "k", write: 0)), at: t0)
  }

  /// A refused copy is not offered again, nor shown: after the retry interval (a permission
  /// granted meanwhile takes effect) the client asks with `GET`. A `GET` refused to this
  /// client's key (`forbidden`) is the key's load error, asked again likewise; the snapshot
  /// that comes clears it.
  @Test func aForbiddenQuestionIsALoadErrorAndItsCopyIsNotOfferedAgain() {
    var machine = synced()
    let refused = refuseCopy(on: &machine)
    #expect(!refused.contains(.notify(0)) && machine.keys[0].loadError == nil, "\(refused)")
    let again = machine.handle(.turn, at: t0 + .seconds(1))
    #expect(again.contains(.send(.get(client: "me", key: "k"))), "\(again)")
    let unreadable = machine.handle(
      .reply(.error(code: .forbidden, message: "not readable", key: "k", write: 0)),
      at: t0 + .seconds(1))
    #expect(unreadable.contains(.notify(0)) && unreadable.contains(.progressed), "\(unreadable)")
    let error = machine.keys[0].loadError as? BrokerError
    #expect(error?.code == .refused(.forbidden) && error?.key == "k")
    let third = machine.handle(.turn, at: t0 + .seconds(2))
    #expect(third.contains(.send(.get(client: "me", key: "k"))), "\(third)")
    _ = machine.handle(
      .reply(.snapshot(key: "k", version: 3, lastWrite: 0, value: Data("5".utf8), writes: [:])),
      at: t0 + .seconds(2))
    #expect(machine.keys[0].loadError == nil)
  }

  /// A client whose copy was refused, answered by the new run that it holds no value, shows the
  /// declared value: what every other client reads, not a copy that no broker holds.
  @Test func aRefusedCopyGivesWayToANewRunsEmptyKey() {
    var machine = synced()
    _ = machine.handle(
      .published([.update(key: "k", version: 2, client: "you", write: 1, value: Data("5".utf8))]),
      at: t0)
    _ = machine.rebased(
      machine.rebaseDue(0)!.result(decoded: .success(KeyValue(5)), local: KeyValue(5), through: 0))
    _ = refuseCopy(on: &machine)
    _ = machine.handle(.turn, at: t0 + .seconds(1))
    _ = machine.handle(
      .reply(.snapshot(key: "k", version: 0, lastWrite: 0, value: Data(), writes: [:])),
      at: t0 + .seconds(1))
    let rebase = machine.rebaseDue(0)
    #expect(rebase?.confirmed == KeyValue(0) && rebase?.undecoded == nil)
    #expect(machine.keys[0].loadError == nil && machine.keys[0].confirmedData == nil)
  }

  /// A write refused to this client's key (`forbidden`) is not kept pending: its mutations are
  /// dropped as refused and the value goes back to the confirmed one; until the retry interval
  /// later mutations are refused at once, with no round trip; the first after it is sent, so
  /// that a permission granted meanwhile takes effect.
  @Test func aForbiddenWriteIsRefusedAndLaterOnesAtOnce() {
    var machine = synced()
    guard let request = sentWrite(on: &machine) else { return }
    _ = machine.handle(mutated(2, 2), at: t0)
    let refused = machine.handle(
      .reply(.error(code: .forbidden, message: "not writable", key: "k", write: request.id)),
      at: t0)
    #expect(refused.contains(.refused(key: 0, sequences: 1...2)), "\(refused)")
    #expect(refused.contains(.rebase(0)) && refused.contains(.notify(0)), "\(refused)")
    #expect(!machine.keys[0].hasUnconfirmedWrites && machine.keys[0].writesInFlight == 0)
    #expect((machine.keys[0].saveError as? BrokerError)?.code == .refused(.forbidden))
    let rebase = machine.rebaseDue(0)
    #expect(rebase?.confirmedThrough == 2)
    _ = machine.rebased(rebase!.result(decoded: nil, local: KeyValue(0), through: 2))
    #expect(machine.keys[0].local == KeyValue(0))

    // Within the retry interval: refused at once.
    let soon = t0 + .milliseconds(10)
    _ = machine.handle(mutated(3, 1), at: soon)
    let atOnce = machine.handle(.turn, at: soon)
    #expect(atOnce.contains(.refused(key: 0, sequences: 3...3)), "\(atOnce)")
    #expect(!atOnce.contains { if case .encode = $0 { true } else { false } })
    _ = machine.rebased(machine.rebaseDue(0)!.result(decoded: nil, local: KeyValue(0), through: 3))

    // After it: sent to the broker, which may have granted the write meanwhile.
    let later = t0 + .milliseconds(600)
    _ = machine.handle(.turn, at: later)
    _ = machine.handle(mutated(4, 1), at: later)
    let sent = machine.handle(.turn, at: later)
    #expect(sent.contains { if case .encode = $0 { true } else { false } }, "\(sent)")
  }

  /// A refusal of the client's key as a whole (removed from the allow-list by a reload, or a
  /// client id that is another key's) makes the client refused, with the broker's reason, until
  /// an answer that is not a refusal (the key was put back).
  @Test func aKeyRefusedAsAWholeIsRefusedUntilTheBrokerAnswers() {
    var machine = synced()
    let refusal = machine.handle(
      .reply(.error(code: .forbidden, message: "no longer listed", key: nil, write: nil)), at: t0)
    #expect(
      refusal == [
        .handshake(
          .init(reason: "the broker refused this client's key: no longer listed", isPermanent: true))
      ])
    // Refusals go on: nothing new.
    #expect(
      machine.handle(
        .reply(.error(code: .forbidden, message: "no longer listed", key: nil, write: nil)), at: t0)
        .allSatisfy { if case .handshake = $0 { false } else { true } })
    let answered = machine.handle(.reply(.pong(instance: "run")), at: t0)
    #expect(answered.prefix(2) == [.handshake(nil), .connection(.connected)], "\(answered)")
  }

  /// A broker older than the client refuses its `HELLO` with `version`: the client is refused
  /// with the broker's words and what to do, keeps saying `HELLO`, and is welcomed by a broker
  /// that speaks its version (an upgraded one).
  @Test func aBrokerOfAnOlderProtocolRefusesTheClientUntilOneWelcomesIt() {
    var machine = machine()
    #expect(machine.handle(.turn, at: t0) == [hello])
    let words = #"unsupported protocol version "5" (this broker speaks 4)"#
    let refusal = machine.handle(
      .reply(.error(code: .version, message: words, key: nil, write: nil)), at: t0)
    #expect(
      refusal == [
        .handshake(
          .init(
            reason: "the broker does not speak this client's protocol (\(words)): run a broker "
              + "of this release or newer",
            isPermanent: true))
      ])
    #expect(!machine.isConnected)
    #expect(machine.handle(.turn, at: t0 + .seconds(2)).contains(hello))
    let welcomed = machine.handle(welcome, at: t0 + .seconds(2))
    #expect(welcomed.prefix(1) == [.handshake(nil)], "\(welcomed)")
    #expect(machine.isConnected)
  }

  /// A read or a write answered `seeding` (the broker's seed window) holds the client back
  /// until the broker answers one, or the connection is lost.
  @Test func aSeedingAnswerHoldsWritesBackUntilARequestIsAnswered() {
    var machine = synced()
    _ = machine.handle(
      .reply(.error(code: .seeding, message: "collecting", key: "k", write: 0)), at: t0)
    #expect(machine.isHeldBack)
    _ = machine.handle(
      .reply(.snapshot(key: "k", version: 1, lastWrite: 0, value: Data("0".utf8), writes: [:])),
      at: t0)
    #expect(!machine.isHeldBack)
    guard let request = sentWrite(on: &machine) else { return }
    _ = machine.handle(
      .reply(.error(code: .seeding, message: "collecting", key: "k", write: request.id)), at: t0)
    #expect(machine.isHeldBack)
    #expect(machine.keys[0].hasUnconfirmedWrites)
    _ = machine.handle(.reply(.ack(key: "k", write: request.id, version: 2)), at: t0)
    #expect(!machine.isHeldBack)
    // The next write, a retry interval later, is held back too, then applied: its own update
    // answers it.
    let later = t0 + .milliseconds(600)
    _ = machine.handle(mutated(2, 2), at: later)
    let turn = machine.handle(.turn, at: later)
    guard case .encode(let next)? = turn.last else {
      Issue.record("expected an encoding, got \(turn)")
      return
    }
    _ = machine.encoded(next, .success(Data("2".utf8)), at: later)
    _ = machine.handle(
      .reply(.error(code: .seeding, message: "collecting", key: "k", write: next.id)), at: later)
    #expect(machine.isHeldBack)
    let own = BrokerMessage.update(
      key: "k", version: 3, client: "me", write: next.id, value: Data("2".utf8))
    _ = machine.handle(.published([own]), at: later)
    #expect(!machine.isHeldBack, "a quiet write is answered by its update")
    _ = machine.handle(
      .reply(.error(code: .seeding, message: "collecting", key: "k", write: next.id)), at: later)
    _ = machine.handle(.dealer(.init(kind: .disconnected, endpoint: "tcp://a:5555")), at: later)
    #expect(!machine.isHeldBack)
  }

  @Test func aRejectionRebasesOnTheMutationsTheSlotHolds() {
    var machine = synced()
    guard let request = sentWrite(on: &machine) else { return }
    run(
      [
        Step(
          event: .reply(
            .reject(
              key: "k", write: request.id, version: 2, lastWrite: 0, value: Data("5".utf8),
              writes: ["you": 1])),
          expected: [.rebase(0), .progressed])
      ], on: &machine)
    let rebase = machine.rebaseDue(0)!
    #expect(rebase.confirmedThrough == 0)
    // The slot held a second mutation the mailbox had not brought yet: the rebase included it.
    let actions = machine.rebased(
      rebase.result(decoded: .success(KeyValue(5)), local: KeyValue(7), through: 2))
    #expect(actions == [.notify(0), .turn])
    #expect(machine.keys[0].local == KeyValue(7))
    // Its mail, when it comes, is no news: the value covers it already.
    _ = machine.handle(mutated(2, 2), at: t0)
    #expect(machine.keys[0].local == KeyValue(7))
    #expect(machine.keys[0].unconfirmedWriteCount == 2)
  }

  @Test func anEncodingThatFailsOrIsTooLargeIsRetriedAfterAHeartbeat() {
    struct Refused: Error {}
    var machine = synced()
    guard let request = encodeRequest(on: &machine) else { return }
    #expect(machine.encoded(request, .failure(Refused()), at: t0) == [.notify(0)])
    #expect(machine.keys[0].saveError != nil)
    #expect(machine.handle(.turn, at: t0 + .milliseconds(100)).isEmpty)
    guard case .encode(let retry)? = machine.handle(.turn, at: t0 + .milliseconds(600)).last else {
      Issue.record("expected the retry's encoding")
      return
    }
    // Larger than the 10 bytes the WELCOME allowed: refused without a round trip.
    #expect(machine.encoded(retry, .success(Data(count: 11)), at: t0) == [.progressed])
    #expect(machine.keys[0].hasUnconfirmedWrites)
  }
}

/// The machine's actions for one event as a list of their own, as the tests read them.
extension ClientMachine {
  mutating func handle(_ event: ClientEvent, at now: Moment) -> [ClientAction] {
    var list: [ClientAction] = []
    handle(event, at: now, into: &list)
    return list
  }

  mutating func encoded(
    _ request: KeyMachine.Encode, _ data: Result<Data, any Error>, at now: Moment
  ) -> [ClientAction] {
    var list: [ClientAction] = []
    encoded(request, data, at: now, into: &list)
    return list
  }

  mutating func rebased(_ result: KeyMachine.Rebased) -> [ClientAction] {
    var list: [ClientAction] = []
    rebased(result, into: &list)
    return list
  }
}
