internal import ConcurrencyExtras
internal import Dependencies
public import Foundation

/// A key that persists a value as a file (JSON by default) and follows writes made to that file
/// by other processes.
///
/// ```swift
/// @Shared(.fileStorage(URL(filePath: "/tmp/stats.json"))) var stats = Stats()
/// ```
///
/// Writes are atomic and throttled to one per second per file, with the last value flushed at
/// exit. A corrupt or wrong-shape file sets `loadError` and the last good value stays.
public struct FileStorageKey<Value: Sendable>: SharedKey {
  let url: URL
  let storage: FileStorage
  let decode: @Sendable (Data) throws -> Value
  let encode: @Sendable (Value) throws -> Data

  init(
    url: URL,
    decode: @escaping @Sendable (Data) throws -> Value,
    encode: @escaping @Sendable (Value) throws -> Data
  ) {
    @Dependency(\.defaultFileStorage) var storage
    self.url = url
    self.storage = storage
    self.decode = decode
    self.encode = encode
  }

  /// The file, within its file system.
  public var id: FileStorageKeyID { FileStorageKeyID(url: url, storage: storage.id) }

  /// `.fileStorage(url)`.
  public var description: String { ".fileStorage(\(url.path))" }

  /// Reads and decodes the file; no file means "use the default".
  public func load(context _: LoadContext<Value>, continuation: LoadContinuation<Value>) {
    do {
      guard let data = try storage.load(url) else {
        continuation.resumeReturningInitialValue()
        return
      }
      continuation.resume(returning: try decode(data))
    } catch {
      continuation.resume(throwing: error)
    }
  }

  /// Re-reads the file when another writer changed it; echoes of our own writes are ignored.
  public func subscribe(
    context _: LoadContext<Value>, subscriber: SharedSubscriber<Value>
  ) -> SharedSubscription {
    let (url, storage, decode) = (url, storage, decode)
    return storage.observe(url) {
      // While a local value waits to be written, the reference sets this aside (see
      // ValueReference), so the file's older value cannot step it back.
      do {
        guard let data = try storage.load(url) else {
          subscriber.yieldReturningInitialValue()
          return
        }
        guard !ThrottledWriter.shared.wroteLast(data, to: url) else { return }
        subscriber.yield(try decode(data))
      } catch {
        subscriber.yield(throwing: error)
      }
    }
  }

  /// Encodes and writes the value (throttled for mutations, immediate for explicit saves).
  public func save(_ value: Value, context: SaveContext, continuation: SaveContinuation) {
    do {
      let data = try encode(value)
      let (url, storage) = (url, storage)
      ThrottledWriter.shared.write(
        data, to: url,
        interval: context == .userInitiated ? nil : storage.saveInterval,
        save: { try storage.save($0, url) },
        continuation: continuation
      )
    } catch {
      continuation.resume(throwing: error)
    }
  }
}

/// The identity of a ``FileStorageKey``: a file within one file system.
public struct FileStorageKeyID: Hashable, Sendable {
  let url: URL
  let storage: AnyHashableSendable
}

extension SharedReaderKey {
  /// A value persisted as JSON in a file.
  ///
  /// - Parameters:
  ///   - url: The file.
  ///   - decoder: Decodes the file.
  ///   - encoder: Encodes the value.
  /// - Returns: The key.
  public static func fileStorage<Value: Codable & Sendable>(
    _ url: URL, decoder: JSONDecoder = JSONDecoder(), encoder: JSONEncoder = JSONEncoder()
  ) -> Self where Self == FileStorageKey<Value> {
    let decoder = UncheckedSendable(decoder)
    let encoder = UncheckedSendable(encoder)
    return FileStorageKey(
      url: url,
      decode: { try decoder.value.decode(Value.self, from: $0) },
      encode: { try encoder.value.encode($0) }
    )
  }

  /// A value persisted in a file with custom coding.
  ///
  /// - Parameters:
  ///   - url: The file.
  ///   - decode: Turns the file's bytes into a value.
  ///   - encode: Turns a value into bytes.
  /// - Returns: The key.
  public static func fileStorage<Value>(
    _ url: URL,
    decode: @escaping @Sendable (Data) throws -> Value,
    encode: @escaping @Sendable (Value) throws -> Data
  ) -> Self where Self == FileStorageKey<Value> {
    FileStorageKey(url: url, decode: decode, encode: encode)
  }
}
