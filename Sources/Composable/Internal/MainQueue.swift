import Dispatch

/// Whether the caller runs on the main actor's executor, without trapping.
///
/// The main actor drains the main dispatch queue, which is not always the main thread (test
/// runners on Linux drain it from another one), so `Thread.isMainThread` cannot tell; a queue
/// marker can.
enum MainQueue {
  private static let key = DispatchSpecificKey<UInt8>()
  private static let marked: Void = DispatchQueue.main.setSpecific(key: key, value: 1)

  static var isCurrent: Bool {
    _ = marked
    return DispatchQueue.getSpecific(key: key) != nil
  }
}
