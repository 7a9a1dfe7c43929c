/// A person in the address book.
public struct Contact: Equatable, Identifiable, Sendable {
  /// Its identity in the book.
  public let id: Int
  /// The name.
  public var name: String
  /// Whether it is starred.
  public var isFavorite: Bool

  /// A contact.
  public init(id: Int, name: String, isFavorite: Bool = false) {
    self.id = id
    self.name = name
    self.isFavorite = isFavorite
  }
}
