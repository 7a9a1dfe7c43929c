public import Foundation

/// A store that several brokers share, such as etcd (`SharedBrokerCluster`): each key's record
/// lives there, with a revision that changes on every write, and a write is a compare-and-set on
/// that revision, so two brokers never both apply a write on top of the same state.
///
/// The broker's thread never waits on it, and it never calls into the broker: a commit is sent
/// with an id and its outcome comes back as an event, as do the changes the store watched and
/// its availability. The store queues its events (from any thread) and wakes the broker, whose
/// thread takes them with ``takeEvents()``. Give one to
/// ``BrokerServer/init(configuration:cluster:logger:clock:)``.
public protocol BrokerCluster: AnyObject, Sendable {
  /// The id of the cluster's data, created with it: every broker of the cluster announces it as
  /// its instance, so a client that moves between them keeps its versions.
  var instance: String { get }
  /// Sets how the store wakes the broker when events wait (called from any thread).
  func setWake(_ wake: @escaping @Sendable () -> Void)
  /// Every key's record and revision, read when the broker starts.
  func loadAll() throws -> [String: BrokerClusterRecord]
  /// Stores `record` for `key` if the key is still at `revision` (0: absent), or with `nil` only
  /// checks that it is. Its outcome comes as ``BrokerClusterEvent/committed(id:_:)`` with the same
  /// `id`.
  func commit(key: String, record: Data?, expecting revision: Int64, id: UInt64)
  /// Stores `record` for `key` whatever the key holds; nothing comes back (the broker puts the
  /// same key again later).
  func put(key: String, record: Data)
  /// Deletes `key` whatever it holds; nothing comes back, and a watch does not report it (a
  /// broker removes the record of whom a broker run that stopped recording heard).
  func remove(key: String)
  /// The events since the last call, in the order they happened.
  func takeEvents() -> [BrokerClusterEvent]
  /// Stops watching.
  func close()
  /// Lists this broker among the cluster's, at the ROUTER endpoint its clients reach it at,
  /// for as long as it runs; every broker then reports the list as ``BrokerClusterEvent/members(_:)``.
  func register(router: String)
}

extension BrokerCluster {
  /// A store that keeps no list of brokers: clients learn none.
  public func register(router: String) {}
  /// A store that keeps every record it was given.
  public func remove(key: String) {}
}

/// What a ``BrokerCluster`` tells its broker.
public enum BrokerClusterEvent: Sendable {
  /// A commit's outcome: an error when the store could not be reached (the record may or may not
  /// be stored; whoever sends the same commit again learns which).
  case committed(id: UInt64, Result<BrokerClusterCommit, any Error>)
  /// Records the store watched change, in its order. `followsHistory`: they are the store's
  /// history since the last ones (the broker's own commits among them), not every key read
  /// anew after the history was lost.
  case changed([(key: String, record: BrokerClusterRecord)], followsHistory: Bool)
  /// Whether the store answers: a broker cut from it refuses requests.
  case availability(Bool)
  /// The ROUTER endpoints of the cluster's live brokers, as registered in the store (each with
  /// a lease, so a broker that dies drops out), in a stable order. The broker tells its clients.
  case members([String])
}

/// What a ``BrokerCluster/commit(key:record:expecting:id:)`` did.
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
