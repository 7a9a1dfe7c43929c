/// Why a call to etcd failed.
public enum EtcdError: Error, Equatable, CustomStringConvertible {
  /// No endpoint answered (refused, timed out, reset), with the last reason.
  case unreachable(endpoints: [String], reason: String)
  /// etcd answered with an error, e.g. no leader (a member that lost its quorum).
  case refused(status: Int, message: String)
  /// The answer could not be read as etcd's JSON.
  case malformed(String)
  /// A watch started before the oldest revision etcd still keeps: everything must be read again.
  case compacted(revision: Int64)

  /// What failed, for logs and error messages.
  public var description: String {
    switch self {
    case .unreachable(let endpoints, let reason):
      "etcd unreachable at \(endpoints.joined(separator: ",")): \(reason)"
    case .refused(let status, let message): "etcd refused the request (HTTP \(status)): \(message)"
    case .malformed(let detail): "etcd's answer was not understood: \(detail)"
    case .compacted(let revision): "etcd compacted its history up to revision \(revision)"
    }
  }
}
