import Dependencies
import Foundation
import Sharing
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1))) struct FileStorageKeyTests {
  let url = URL(fileURLWithPath: "/stats.json")

  @Test func savesAndLoadsAsJSON() async throws {
    @Dependency(\.defaultFileStorage) var storage
    @Shared(.fileStorage(url)) var stats = Stats()
    $stats.withLock { $0.count = 3 }
    let data = try #require(try storage.load(url))
    #expect(try JSONDecoder().decode(Stats.self, from: data) == Stats(count: 3))
  }

  @Test func storedValueWinsOverTheDefault() throws {
    @Dependency(\.defaultFileStorage) var storage
    try storage.save(JSONEncoder().encode(Stats(count: 9)), url)
    @Shared(.fileStorage(url)) var stats = Stats()
    #expect(stats.count == 9)
  }

  @Test func corruptFileSetsLoadErrorAndKeepsTheLastGoodValue() throws {
    @Dependency(\.defaultFileStorage) var storage
    @Shared(.fileStorage(url)) var stats = Stats(count: 1)
    try storage.save(Data("{not json".utf8), url)
    #expect($stats.loadError != nil)
    #expect(stats.count == 1)
    try storage.save(Data(#"{"name":"wrong shape"}"#.utf8), url)
    #expect($stats.loadError != nil)
    try storage.save(JSONEncoder().encode(Stats(count: 4)), url)
    #expect($stats.loadError == nil)
    #expect(stats.count == 4)
  }

  @Test func writesByAnotherClientAreObserved() throws {
    @Dependency(\.defaultFileStorage) var storage
    @Shared(.fileStorage(url)) var stats = Stats()
    var seen: [Int] = []
    let cancellable = $stats.publisher.sink { seen.append($0.count) }
    try storage.save(JSONEncoder().encode(Stats(count: 2)), url)
    #expect(seen == [0, 2])
    cancellable.cancel()
  }

  @Test func realFileSystemWithInotify() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("stats.json")
    try await withDependencies {
      $0.defaultFileStorage = .fileSystem
    } operation: {
      @Shared(.fileStorage(file)) var stats = Stats()
      $stats.withLock { $0.count = 1 }
      try await $stats.save()
      #expect(try JSONDecoder().decode(Stats.self, from: Data(contentsOf: file)).count == 1)
      // Another writer replaces the file atomically; inotify reports it.
      let stream = $stats.values
      try JSONEncoder().encode(Stats(count: 5, name: "other")).write(to: file, options: .atomic)
      let observed = await firstValue(in: stream) { $0.count == 5 }
      #expect(observed?.name == "other")
    }
  }

  @Test func twoProcessesConvergeThroughOneFile() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("stats.json")
    try await withDependencies {
      $0.defaultFileStorage = .fileSystem
    } operation: {
      @Shared(.fileStorage(file, decoder: JSONDecoder(), encoder: JSONEncoder()))
      var stats = CounterStats()
      let stream = $stats.values
      let other = try await ChildProcess(
        "shared-state-demo",
        ["--stats-file", file.path, "--script", "+,+,+", "--wait-until-count", "10", "--timeout", "30"]
      )
      let exited = AsyncStream<Void> { continuation in
        Task {
          _ = await other.waitForExit()
          continuation.finish()
        }
      }
      // This process observes the other one's three taps (unless it died first)...
      let observed = await firstValue(in: stream, orUntilEndOf: exited) { $0.count == 3 }
      try #require(observed?.numberOfCounts == 3, "the other process printed:\n\(other.printed)")
      // ...and the other one observes this process's write.
      $stats.withLock { $0.count = 10 }
      try await $stats.save()
      #expect(await other.waitForExit() == 0)
      let printed = other.printed
      #expect(printed.contains("final   │ counter 10, profile 10 (in sync)"), "the other process printed:\n\(printed)")
    }
  }
}

/// The demo's stats file format.
private struct CounterStats: Codable, Equatable, Sendable {
  var count = 0
  var maxCount = 0
  var minCount = 0
  var numberOfCounts = 0
}
