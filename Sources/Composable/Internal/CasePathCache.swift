public import CasePaths
import Foundation

/// Turning a case key path into an extract/embed pair walks the case path machinery, which
/// costs microseconds, and reducer bodies are rebuilt for every action. The conversion is done
/// once per key path and remembered (case paths are immutable, so sharing them is safe).
@usableFromInline
final class CasePathCache: @unchecked Sendable {
  private static let shared = CasePathCache()
  private let lock = NSLock()
  private var casePaths: [AnyKeyPath: Any] = [:]

  @usableFromInline
  static func casePath<Root, Value>(_ keyPath: CaseKeyPath<Root, Value>) -> AnyCasePath<Root, Value> {
    shared.casePath(keyPath)
  }

  private func casePath<Root, Value>(_ keyPath: CaseKeyPath<Root, Value>) -> AnyCasePath<Root, Value> {
    lock.lock()
    defer { lock.unlock() }
    if let cached = casePaths[keyPath] as? AnyCasePath<Root, Value> { return cached }
    let casePath = AnyCasePath(keyPath)
    casePaths[keyPath] = casePath
    return casePath
  }
}
