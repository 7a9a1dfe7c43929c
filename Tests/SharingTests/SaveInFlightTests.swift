import Synchronization
import Sharing
import Testing

/// A storage report read before a local save lands must not step the value back; a change by
/// someone else that arrived meanwhile is picked up once the save is done.
@Suite struct SaveInFlightTests {
  @Test func staleReportDuringASaveIsSetAside() {
    let storage = HeldStorage(stored: 3)
    @Shared(HeldKey(storage: storage)) var count = 0
    #expect(count == 3)

    $count.withLock { $0 = 10 }
    // Storage read the old value just before the write landed, and reports it now.
    storage.report(3)
    #expect(count == 10)

    storage.finishSaves()
    #expect(storage.stored == 10)
    #expect(count == 10)
  }

  @Test func changeByAnotherWriterDuringASaveIsReadAfterIt() {
    let storage = HeldStorage(stored: 3)
    @Shared(HeldKey(storage: storage)) var count = 0

    $count.withLock { $0 = 10 }
    storage.finishSaves()
    // Another process wrote after ours landed, but reported it before our save was booked.
    $count.withLock { $0 = 11 }
    storage.write(byAnotherProcess: 42)
    #expect(count == 11)
    storage.finishSaves(overwrite: false)
    #expect(count == 42)
  }

  @Test func reportsApplyWhenNoSaveIsInFlight() {
    let storage = HeldStorage(stored: 3)
    @Shared(HeldKey(storage: storage)) var count = 0
    storage.write(byAnotherProcess: 7)
    #expect(count == 7)
  }
}

/// Storage whose saves finish only when the test says so.
private final class HeldStorage: Sendable {
  private struct State {
    var stored: Int
    var heldSaves: [(Int, SaveContinuation)] = []
    var subscriber: SharedSubscriber<Int>?
  }

  private let state: Mutex<State>

  init(stored: Int) { state = Mutex(State(stored: stored)) }

  var stored: Int { state.withLock { $0.stored } }

  func load() -> Int { stored }

  func hold(_ value: Int, _ continuation: SaveContinuation) {
    state.withLock { $0.heldSaves.append((value, continuation)) }
  }

  func subscribe(_ subscriber: SharedSubscriber<Int>) {
    state.withLock { $0.subscriber = subscriber }
  }

  /// Tells the subscriber about `value` without storing it (a read that raced a write).
  func report(_ value: Int) {
    state.withLock { $0.subscriber }?.yield(value)
  }

  func write(byAnotherProcess value: Int) {
    state.withLock { $0.stored = value }
    report(value)
  }

  /// Lands the held saves (storing their values unless `overwrite` is false), then books them.
  func finishSaves(overwrite: Bool = true) {
    let saves = state.withLock { state in
      defer { state.heldSaves = [] }
      if overwrite, let last = state.heldSaves.last { state.stored = last.0 }
      return state.heldSaves
    }
    for (_, continuation) in saves { continuation.resume() }
  }
}

private struct HeldKey: SharedKey {
  let storage: HeldStorage
  var id: ObjectIdentifier { ObjectIdentifier(storage) }
  var description: String { "HeldKey" }

  func load(context _: LoadContext<Int>, continuation: LoadContinuation<Int>) {
    continuation.resume(returning: storage.load())
  }

  func subscribe(context _: LoadContext<Int>, subscriber: SharedSubscriber<Int>) -> SharedSubscription {
    storage.subscribe(subscriber)
    return SharedSubscription {}
  }

  func save(_ value: Int, context _: SaveContext, continuation: SaveContinuation) {
    storage.hold(value, continuation)
  }
}
