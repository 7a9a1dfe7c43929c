import QuickJSON
import SharedBroker

/// The simulated shared value: how many times each mutation is in it. Every mutation adds its
/// own tag, so "applied exactly once" is a count of 1; and each client's mutations must be
/// applied in the order it made them. It travels through the code `@JSONCodable` generates.
@JSONCodable
struct Tally: Codable, Equatable, Sendable {
  var counts: [String: Int] = [:]
  /// The number of the last mutation applied, per client.
  var last: [String: Int] = [:]
  /// Mutations applied after a later one of the same client.
  var outOfOrder = 0

  /// Applies the mutation `tag`, its client's `number`th.
  mutating func apply(_ tag: String, client: String, number: Int) {
    counts[tag, default: 0] += 1
    if let previous = last[client], previous >= number { outOfOrder += 1 }
    last[client] = number
  }
}
