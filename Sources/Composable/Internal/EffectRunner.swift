internal import ConcurrencyExtras
internal import OpenCombine

/// Interprets ``Effect`` trees for one store tree: starts the work, routes actions back, and
/// keeps the registry of cancellable and throttled effects.
///
/// One runner per root store keeps cancellation identifiers local to that store, so two stores
/// (or two tests running in parallel) never cancel each other's effects.
@MainActor
final class EffectRunner<Action> {
  private var cancellables: [AnyHashableSendable: [ObjectIdentifier: EffectHandle]] = [:]
  private var throttled: Set<AnyHashableSendable> = []
  private(set) var inFlight: [ObjectIdentifier: EffectHandle] = [:]
  private let send: @MainActor (Action) -> Void
  /// Called whenever an in-flight effect finishes, so waiters (the test store) can re-check.
  var onEffectFinished: (@MainActor () -> Void)?

  init(send: @escaping @MainActor (Action) -> Void) {
    self.send = send
  }

  /// Starts an effect returned by the reducer and tracks it until it finishes.
  func run(_ effect: Effect<Action>) -> EffectHandle? {
    guard let handle = start(effect.operation) else { return nil }
    let key = ObjectIdentifier(handle)
    inFlight[key] = handle
    handle.onFinish { [weak self] in
      self?.inFlight[key] = nil
      self?.onEffectFinished?()
    }
    return handle
  }

  func cancelAll() {
    for handle in inFlight.values { handle.cancel() }
  }

  private func cancel(id: AnyHashableSendable) {
    guard let handles = cancellables.removeValue(forKey: id) else { return }
    for handle in handles.values { handle.cancel() }
  }

  // MARK: - Interpreting operations

  private func start(_ operation: Effect<Action>.Operation) -> EffectHandle? {
    switch operation {
    case .none:
      return nil
    case let .send(action):
      send(action.value)
      return nil
    case let .cancel(id):
      cancel(id: id)
      return nil
    case let .publisher(publisher):
      return subscribe(to: publisher.value)
    case let .run(priority, work):
      return spawn(priority: priority, work)
    case let .cancellable(id, cancelInFlight, operation):
      if cancelInFlight { cancel(id: id) }
      guard let handle = start(operation) else { return nil }
      let key = ObjectIdentifier(handle)
      cancellables[id, default: [:]][key] = handle
      handle.onFinish { [weak self] in
        self?.cancellables[id]?[key] = nil
        if self?.cancellables[id]?.isEmpty == true { self?.cancellables[id] = nil }
      }
      return handle
    case let .throttle(id, window, operation):
      guard !throttled.contains(id) else { return nil }
      throttled.insert(id)
      if let timer = start(window) {
        timer.onFinish { [weak self] in self?.throttled.remove(id) }
      } else {
        throttled.remove(id)
      }
      return start(operation)
    case let .merge(operations):
      return merge(operations.compactMap(start))
    case let .concatenate(operations):
      return concatenate(operations[...])
    }
  }

  private func subscribe(to publisher: AnyPublisher<Action, Never>) -> EffectHandle? {
    let handle = EffectHandle()
    let send = self.send
    let cancellable = publisher.sink(
      receiveCompletion: { _ in onMainActor { handle.finish() } },
      receiveValue: { action in
        let action = UncheckedSendable(action)
        onMainActor { if !handle.isFinished { send(action.value) } }
      }
    )
    guard !handle.isFinished else { return nil }
    handle.setCancel { cancellable.cancel() }
    return handle
  }

  private func spawn(
    priority: TaskPriority?, _ work: @escaping @Sendable (Send<Action>) async -> Void
  ) -> EffectHandle {
    let handle = EffectHandle()
    let send = Send<Action>(send: { [weak self] action in self?.send(action) })
    let task = Task(priority: priority) { @MainActor in
      await work(send)
      handle.finish()
    }
    handle.setCancel { task.cancel() }
    return handle
  }

  private func merge(_ handles: [EffectHandle]) -> EffectHandle? {
    guard handles.count > 1 else { return handles.first }
    let merged = EffectHandle(cancel: { for handle in handles { handle.cancel() } })
    var remaining = handles.count
    for handle in handles {
      handle.onFinish {
        remaining -= 1
        if remaining == 0 { merged.finish() }
      }
    }
    return merged
  }

  /// Starts each operation when the previous one finishes; synchronous ones run back to back.
  private func concatenate(_ operations: ArraySlice<Effect<Action>.Operation>) -> EffectHandle? {
    var remaining = operations
    while let operation = remaining.popFirst() {
      guard let current = start(operation) else { continue }
      let chain = EffectHandle()
      var active = current
      chain.setCancel { active.cancel() }
      func advance() {
        guard !chain.isCancelled else { return }
        while let operation = remaining.popFirst() {
          guard let next = start(operation) else { continue }
          active = next
          next.onFinish(advance)
          return
        }
        chain.finish()
      }
      current.onFinish(advance)
      return chain
    }
    return nil
  }
}

/// Runs `body` on the main actor: right away when already there, otherwise after a hop.
func onMainActor(_ body: @escaping @MainActor @Sendable () -> Void) {
  if MainQueue.isCurrent {
    MainActor.assumeIsolated(body)
  } else {
    Task { @MainActor in body() }
  }
}
