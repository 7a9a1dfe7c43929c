import Foundation
import Sharing

/// A fresh directory under the system's temporary directory, removed by `cleanup`.
func temporaryDirectory() throws -> URL {
  let url = FileManager.default.temporaryDirectory
    .appendingPathComponent("SharingTests-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}

/// The first value of `stream` that satisfies `condition`.
func firstValue<T: Sendable>(
  in stream: AsyncStream<T>, where condition: (T) -> Bool
) async -> T? {
  for await value in stream where condition(value) { return value }
  return nil
}

/// The first value of `stream` that satisfies `condition`, or `nil` once `other` ends first.
func firstValue<T: Sendable>(
  in stream: AsyncStream<T>, orUntilEndOf other: AsyncStream<Void>,
  where condition: @escaping @Sendable (T) -> Bool
) async -> T? {
  await withTaskGroup(of: T?.self) { group in
    group.addTask { await firstValue(in: stream, where: condition) }
    group.addTask {
      for await _ in other {}
      return nil
    }
    let first = await group.next() ?? nil
    group.cancelAll()
    return first
  }
}

struct Stats: Codable, Equatable, Sendable {
  var count = 0
  var name = ""
}
