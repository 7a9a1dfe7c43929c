public import Foundation

/// A store that several brokers share, such as etcd (`SharedBrokerCluster`): each key's record
/// lives there, with a revision that changes on every write, and a write is a compare-and-set on
/// that revision, so two brokers never both apply a write on top of the same state.
///
/// The broker's thread never waits on it: a commit is answered through its completion handler
/// (from any thread) while the broker goes on serving, and ``takeChanges()`` hands over what
/// other brokers wrote, which the store reads on a thread of its own and announces with
/// `onChange`. Give one to ``BrokerServer/init(configuration:cluster:logger:clock:)``.
public protocol BrokerCluster: AnyObject, Sendable {
  /// The id of the cluster's data, created with it: every broker of the cluster announces it as
  /// its instance, so a client that moves between them keeps its versions.
  var instance: String { get }
  /// Whether the shared store answered lately; a broker cut from it refuses requests.
  var isAvailable: Bool { get }
  /// Called (from any thread) when ``takeChanges()`` has something or availability changed.
  func setOnChange(_ onChange: @escaping @Sendable () -> Void)
  /// Every key's record and revision, read when the broker starts.
  func loadAll() throws -> [String: BrokerClusterRecord]
  /// Stores `record` for `key` if the key is still at `revision` (0: absent), or with `nil` only
  /// checks that it is, and calls `completion` with the outcome.
  ///
  /// The completion gets an error when the store could not be reached: the record may or may
  /// not be stored. Whoever sends the same commit again learns which.
  func commit(
    key: String, record: Data?, expecting revision: Int64,
    completion: @escaping @Sendable (Result<BrokerClusterCommit, any Error>) -> Void)
  /// What changed since the last call, in the store's order. The changes made by this
  /// broker's own commits may be left out: their answers tell of them.
  func takeChanges() -> [(key: String, record: BrokerClusterRecord)]
  /// Stops watching.
  func close()
}

/// What a ``BrokerCluster/commit(key:record:expecting:)`` did.
public enum BrokerClusterCommit: Sendable {
  /// The record was stored at this revision (or, for a check, the key is still at it).
  case stored(revision: Int64)
  /// The key had changed: its current record, or `nil` if it has none.
  case changed(BrokerClusterRecord?)
}

/// A key's record in a ``BrokerCluster`` and the revision the store gave it.
public struct BrokerClusterRecord: Sendable {
  /// The record's bytes (the broker's own encoding).
  public var data: Data
  /// The store's revision of the key: greater for every later write.
  public var revision: Int64

  /// Creates a record.
  public init(data: Data, revision: Int64) {
    self.data = data
    self.revision = revision
  }
}
