internal import ConcurrencyExtras
public import Dependencies
internal import IssueReporting
import Synchronization

/// One live reference per key id, held weakly: every `@Shared(.inMemory("count"))` in the
/// process is the same reference while any of them is alive.
///
/// A dependency, so each test gets its own cache and tests never share references. Override it
/// with a fresh instance to get fresh references, as a relaunched process would.
public final class PersistentReferences: Sendable {
  private struct Weak: @unchecked Sendable {
    weak var reference: AnyObject?
  }

  private let references = Mutex<[AnyHashableSendable: Weak]>([:])

  /// Creates an empty cache.
  public init() {}

  func reference<Key: SharedReaderKey>(
    for key: Key, default initialValue: () -> Key.Value
  ) -> any MutableReference<Key.Value> {
    let id = AnyHashableSendable(key.id)
    if let existing = references.withLock({ $0[id]?.reference }) {
      if let reference = existing as? any MutableReference<Key.Value> { return reference }
      reportIssue(
        """
        \(key) is already shared as a different type than \(Key.Value.self). Each key id must \
        hold one type; the new reference is not shared with the old one.
        """
      )
    }
    let reference = makeReference(for: key, initialValue: initialValue())
    return references.withLock { references in
      // Another thread may have created it meanwhile: the first one wins.
      if let winner = references[id]?.reference as? any MutableReference<Key.Value> {
        return winner
      }
      references[id] = Weak(reference: reference)
      return reference
    }
  }

  private func makeReference<Key: SharedReaderKey>(
    for key: Key, initialValue: Key.Value
  ) -> any MutableReference<Key.Value> {
    if let provider = key as? any ReferenceProvidingKey<Key.Value> {
      return provider.makeReference(initialValue: initialValue)
    }
    return ValueReference(key: key, initialValue: initialValue)
  }
}

/// A key that brings its own reference type, for storage that must see each mutation (not just
/// the resulting value), like the broker's rebasing of pending writes.
package protocol ReferenceProvidingKey<Value>: SharedReaderKey {
  /// Creates the one live reference for this key's id.
  func makeReference(initialValue: Value) -> any MutableReference<Value>
}

extension PersistentReferences: DependencyKey {
  /// One cache for the process.
  public static let liveValue = PersistentReferences()
  /// A fresh cache per test.
  public static var testValue: PersistentReferences { PersistentReferences() }
}

extension DependencyValues {
  /// The live references by key id.
  public var persistentReferences: PersistentReferences {
    get { self[PersistentReferences.self] }
    set { self[PersistentReferences.self] = newValue }
  }
}
