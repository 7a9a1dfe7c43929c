public import Foundation

/// One key of etcd with its value and the revisions etcd keeps for it.
public struct EtcdKeyValue: Equatable, Sendable {
  /// The key's bytes.
  public var key: Data
  /// The value's bytes.
  public var value: Data
  /// The cluster revision of the key's creation.
  public var createRevision: Int64
  /// The cluster revision of the key's last change: what a compare-and-set compares.
  public var modRevision: Int64

  /// Creates a key-value pair.
  public init(key: Data, value: Data, createRevision: Int64, modRevision: Int64) {
    self.key = key
    self.value = value
    self.createRevision = createRevision
    self.modRevision = modRevision
  }
}

/// What a watch delivers: the changes of one etcd revision range, in revision order.
public struct EtcdWatchBatch: Sendable {
  /// The cluster revision the batch brings the watcher up to.
  public var revision: Int64
  /// The keys as each change left them, oldest first (deletions are not reported).
  public var changes: [EtcdKeyValue]
}
