internal import ConcurrencyExtras
internal import OpenCombine

/// A reference to a property of another shared value (`$stats.count`): reads through the base
/// and writes back into it under the base's lock.
final class AppendKeyPathReference<Root: Sendable, Value: Sendable>: MutableReference,
  @unchecked Sendable
{
  private let base: any MutableReference<Root>
  private let keyPath: WritableKeyPath<Root, Value>

  init(base: any MutableReference<Root>, keyPath: WritableKeyPath<Root, Value>) {
    self.base = base
    self.keyPath = keyPath
  }

  var value: Value { base.value[keyPath: keyPath] }
  var liveValue: Value { base.liveValue[keyPath: keyPath] }
  func access() { base.access() }
  var isLoading: Bool { base.isLoading }
  var loadError: (any Error)? { base.loadError }
  var saveError: (any Error)? { base.saveError }
  var description: String { "\(base.description)\(keyPath)" }

  var publisher: AnyPublisher<Value, Never> {
    let keyPath = keyPath
    return base.publisher.map { $0[keyPath: keyPath] }.eraseToAnyPublisher()
  }

  func withLock<R>(_ body: @escaping @Sendable (inout Value) throws -> R) rethrows -> R {
    let keyPath = UncheckedSendable(keyPath)
    return try base.withLock { try body(&$0[keyPath: keyPath.value]) }
  }

  func load() async throws { try await base.load() }
  func save() async throws { try await base.save() }
}
