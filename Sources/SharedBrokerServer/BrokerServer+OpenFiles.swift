import Foundation

extension BrokerServer {
  /// Raises this process's soft limit of open files to its hard limit, as Redis does at start:
  /// each client takes two connections, and shells and service managers often set a soft limit
  /// of 1,024. The `broker` program calls it before it starts the server.
  ///
  /// - Returns: The soft limit before and after.
  @discardableResult
  public static func raiseOpenFileLimit() -> (before: Int, after: Int) {
    var limit = rlimit()
    guard getrlimit(Self.openFileResource, &limit) == 0 else { return (0, 0) }
    let before = Int(clamping: limit.rlim_cur)
    guard limit.rlim_cur < limit.rlim_max else { return (before, before) }
    var raised = limit
    raised.rlim_cur = limit.rlim_max
    guard setrlimit(Self.openFileResource, &raised) == 0 else { return (before, before) }
    return (before, Int(clamping: raised.rlim_cur))
  }

  /// `RLIMIT_NOFILE`, as Glibc's functions take it.
  private static var openFileResource: __rlimit_resource_t {
    __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
  }

  /// This process's soft limit of open files, and how many are open now.
  static func openFiles() -> (limit: Int, inUse: Int) {
    var limit = rlimit()
    let soft = getrlimit(Self.openFileResource, &limit) == 0 ? Int(clamping: limit.rlim_cur) : 1_024
    let inUse = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    return (soft, inUse)
  }
}
