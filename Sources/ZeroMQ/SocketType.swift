internal import CZeroMQ

/// The kinds of ZeroMQ socket this project uses; a struct so more can be added without breaking
/// anyone's exhaustive `switch`.
public struct SocketType: Hashable, Sendable, CustomStringConvertible {
  enum Kind: Hashable, Sendable {
    case pub, sub, xpub, xsub, dealer, router, pair, push, pull, req, rep
  }

  let kind: Kind

  /// Publishes to any number of subscribers.
  public static let pub = SocketType(kind: .pub)
  /// Receives what publishers send on subscribed topics.
  public static let sub = SocketType(kind: .sub)
  /// A publisher that sees subscriptions.
  public static let xpub = SocketType(kind: .xpub)
  /// A subscriber that sends subscriptions as messages.
  public static let xsub = SocketType(kind: .xsub)
  /// Asynchronous request side, load-balancing over peers.
  public static let dealer = SocketType(kind: .dealer)
  /// Asynchronous reply side, addressing peers by routing id.
  public static let router = SocketType(kind: .router)
  /// One-to-one, e.g. between threads over `inproc://`.
  public static let pair = SocketType(kind: .pair)
  /// Pipeline output.
  public static let push = SocketType(kind: .push)
  /// Pipeline input.
  public static let pull = SocketType(kind: .pull)
  /// Synchronous request.
  public static let req = SocketType(kind: .req)
  /// Synchronous reply.
  public static let rep = SocketType(kind: .rep)

  var rawValue: Int32 {
    switch kind {
    case .pub: ZMQ_PUB
    case .sub: ZMQ_SUB
    case .xpub: ZMQ_XPUB
    case .xsub: ZMQ_XSUB
    case .dealer: ZMQ_DEALER
    case .router: ZMQ_ROUTER
    case .pair: ZMQ_PAIR
    case .push: ZMQ_PUSH
    case .pull: ZMQ_PULL
    case .req: ZMQ_REQ
    case .rep: ZMQ_REP
    }
  }

  /// The ZeroMQ name, e.g. `ROUTER`.
  public var description: String { "\(kind)".uppercased() }
}
