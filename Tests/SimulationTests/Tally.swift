/// The simulated shared value: how many times each mutation is in it. Every mutation adds its
/// own tag, so "applied exactly once" is a count of 1.
struct Tally: Codable, Equatable, Sendable {
  var counts: [String: Int] = [:]
}
