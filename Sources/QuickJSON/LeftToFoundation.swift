/// The reason a fast decode or encode stops; never seen by callers: Foundation, or Codable
/// through the fast path, does it again and makes any error they see.
struct LeftToFoundation: Error {}
