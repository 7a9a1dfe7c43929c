import Foundation
import QuickJSON

/// What a cluster's broker records in the store about whom it heard from: each client's last
/// hearing, and when the record was made. Every hearing of the broker before `asOf` is in it, so
/// another broker knows how far its view of this one's hearings reaches.
struct HeardRecord: Codable, Equatable {
  /// When the record was made, in wall-clock milliseconds.
  var asOf: Int64
  /// When each client was last heard from, in wall-clock milliseconds.
  var clients: [String: Int64]
  /// The CURVE key each client's id belongs to (those that said `HELLO` with one), so that
  /// every broker of the cluster refuses the id to other keys; absent without CURVE.
  var owners: [String: String]?

  init(asOf: Int64, clients: [String: Int64], owners: [String: String]? = nil) {
    self.asOf = asOf
    self.clients = clients
    self.owners = owners
  }

  /// Decodes a record, or the plain client map that brokers wrote before records said when they
  /// were made (those reach at least as far as their latest hearing). `nil` if it is neither.
  init?(decoding data: Data) {
    let decoder = QuickJSONDecoder()
    if let record = try? decoder.decode(Self.self, from: data) {
      self = record
    } else if let clients = try? decoder.decode([String: Int64].self, from: data) {
      self.init(asOf: clients.values.max() ?? 0, clients: clients)
    } else {
      return nil
    }
  }
}
