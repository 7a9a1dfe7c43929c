import Foundation
#if canImport(Glibc)
  import Glibc
#endif

/// Tells about writes to files made by any process, through one inotify descriptor and one
/// thread for the whole process (no polling).
///
/// It watches the parent directory, not the file: an atomic write replaces the file's inode, and
/// a watch on the old inode would go silent.
final class FileWatcher: @unchecked Sendable {
  static let shared = FileWatcher()

  private struct Observer {
    let fileName: String
    let handler: @Sendable () -> Void
  }

  // IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM
  private static let mask: UInt32 = 0x008 | 0x080 | 0x200 | 0x040
  private let fd: Int32
  private let lock = NSLock()
  private var directoryWatches: [String: Int32] = [:]
  private var observers: [Int32: [UUID: Observer]] = [:]

  private init() {
    fd = inotify_init1(Int32(O_CLOEXEC))
    guard fd >= 0 else { return }
    let thread = Thread { [unowned self] in readEvents() }
    thread.name = "SharedMirror.FileWatcher"
    thread.start()
  }

  /// Calls `handler` on the watcher thread whenever `url` is written, replaced or removed.
  func observe(_ url: URL, handler: @escaping @Sendable () -> Void) -> SharedSubscription {
    guard fd >= 0 else { return SharedSubscription {} }
    let directory = url.deletingLastPathComponent().path
    try? FileManager.default.createDirectory(
      atPath: directory, withIntermediateDirectories: true
    )
    let id = UUID()
    let added: Int32? = lock.withLock {
      let wd = directoryWatches[directory] ?? inotify_add_watch(fd, directory, Self.mask)
      guard wd >= 0 else { return nil }
      directoryWatches[directory] = wd
      observers[wd, default: [:]][id] = Observer(fileName: url.lastPathComponent, handler: handler)
      return wd
    }
    guard let wd = added else { return SharedSubscription {} }
    return SharedSubscription { [self] in
      lock.withLock {
        observers[wd]?[id] = nil
        if observers[wd]?.isEmpty == true {
          observers[wd] = nil
          directoryWatches[directory] = nil
          inotify_rm_watch(fd, wd)
        }
      }
    }
  }

  private func readEvents() {
    let capacity = 64 * 1024
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
    defer { buffer.deallocate() }
    while true {
      let count = read(fd, buffer, capacity)
      if count < 0 {
        if errno == EINTR { continue }
        return
      }
      var offset = 0
      var handlers: [@Sendable () -> Void] = []
      while offset + 16 <= count {
        let wd = buffer.load(fromByteOffset: offset, as: Int32.self)
        let nameLength = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
        let nameStart = buffer.advanced(by: offset + 16).assumingMemoryBound(to: CChar.self)
        let name = nameLength > 0 ? String(cString: nameStart) : ""
        offset += 16 + nameLength
        lock.withLock {
          for observer in observers[wd]?.values ?? [:].values where observer.fileName == name {
            handlers.append(observer.handler)
          }
        }
      }
      for handler in handlers { handler() }
    }
  }
}
