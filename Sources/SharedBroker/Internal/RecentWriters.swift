/// The last write id of each of the most recent writers of one key, as a client saw them applied
/// (updates, its own ACKs), for the copy it offers a broker that lost the key.
///
/// The copy says which writes it holds so that a writer whose ACK was lost with the broker does
/// not apply its write again. Such a write was among the last ones the broker applied (its ACK
/// would have come a round trip later), so the most recent writers are all a copy needs, and the
/// record stays small however many processes ever wrote the key. The latest writer comes first:
/// a stream of updates from one writer costs one comparison each.
struct RecentWriters {
  /// How many writers are kept.
  static let capacity = BrokerMessage.recentWriters

  private var entries: [(client: String, write: UInt64)] = []

  /// Records that `client`'s write `write` was applied. A client's write ids only grow, so an
  /// older one (from a late update) never replaces a newer one.
  mutating func record(_ client: String, write: UInt64) {
    if entries.first?.client == client {
      entries[0].write = max(entries[0].write, write)
      return
    }
    var write = write
    if let index = entries.firstIndex(where: { $0.client == client }) {
      write = max(write, entries[index].write)
      entries.remove(at: index)
    }
    entries.insert((client, write), at: 0)
    if entries.count > Self.capacity { entries.removeLast() }
  }

  /// Whether `client` is the latest writer, at `write` or a later one: recording that write
  /// would change nothing.
  func isLatest(_ client: String, atLeast write: UInt64) -> Bool {
    guard let latest = entries.first else { return false }
    return latest.client == client && latest.write >= write
  }

  /// The writers and their last write ids.
  var writes: [String: UInt64] {
    Dictionary(entries.map { ($0.client, $0.write) }, uniquingKeysWith: max)
  }
}
