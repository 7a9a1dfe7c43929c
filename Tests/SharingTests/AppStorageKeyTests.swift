import Dependencies
import Foundation
import Sharing
import Testing

@Suite(.timeLimit(.minutes(1))) struct AppStorageKeyTests {
  enum Theme: String, Sendable { case light, dark }

  @Test func supportedTypesRoundTrip() {
    @Shared(.appStorage("bool")) var bool = false
    @Shared(.appStorage("int")) var int = 0
    @Shared(.appStorage("double")) var double = 0.0
    @Shared(.appStorage("string")) var string = ""
    @Shared(.appStorage("data")) var data = Data()
    @Shared(.appStorage("url")) var url = URL(fileURLWithPath: "/")
    @Shared(.appStorage("date")) var date = Date(timeIntervalSince1970: 0)
    @Shared(.appStorage("theme")) var theme = Theme.light
    $bool.withLock { $0 = true }
    $int.withLock { $0 = 42 }
    $double.withLock { $0 = 1.5 }
    $string.withLock { $0 = "hi" }
    $data.withLock { $0 = Data([1, 2]) }
    $url.withLock { $0 = URL(fileURLWithPath: "/tmp") }
    $date.withLock { $0 = Date(timeIntervalSince1970: 60) }
    $theme.withLock { $0 = .dark }
    @Dependency(\.defaultAppStorage) var suite
    withDependencies { $0.persistentReferences = .init() } operation: {
      @Shared(.appStorage("bool")) var bool2 = false
      @Shared(.appStorage("int")) var int2 = 0
      @Shared(.appStorage("double")) var double2 = 0.0
      @Shared(.appStorage("string")) var string2 = ""
      @Shared(.appStorage("data")) var data2 = Data()
      @Shared(.appStorage("url")) var url2 = URL(fileURLWithPath: "/")
      @Shared(.appStorage("date")) var date2 = Date(timeIntervalSince1970: 0)
      @Shared(.appStorage("theme")) var theme2 = Theme.light
      #expect(bool2 && int2 == 42 && double2 == 1.5 && string2 == "hi")
      #expect(data2 == Data([1, 2]) && url2.path == "/tmp")
      #expect(date2 == Date(timeIntervalSince1970: 60) && theme2 == .dark)
    }
  }

  @Test func wrongTypeSetsLoadError() {
    @Shared(.appStorage("value")) var number = 1
    $number.withLock { $0 = 2 }
    withDependencies { $0.persistentReferences = .init() } operation: {
      @Shared(.appStorage("value")) var text = "default"
      #expect(text == "default")
      #expect($text.loadError.map { "\($0)" }?.contains("not a String") == true)
    }
  }

  @Test func anotherProcessWritingTheSuiteIsObserved() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("app-storage.json")
    try await withDependencies {
      $0.defaultAppStorage = AppStorageSuite(url: file)
    } operation: {
      @Shared(.appStorage("count")) var count = 0
      $count.withLock { $0 = 1 }
      let stream = $count.values
      // A second suite on the same file stands in for another process (it has its own cache
      // of references and writes through the file).
      try await withDependencies {
        $0.defaultAppStorage = AppStorageSuite(url: file)
        $0.persistentReferences = .init()
      } operation: {
        @Shared(.appStorage("count")) var other = 0
        #expect(other == 1)
        $other.withLock { $0 = 7 }
        try await $other.save()
      }
      #expect(await firstValue(in: stream) { $0 == 7 } == 7)
    }
  }
}
