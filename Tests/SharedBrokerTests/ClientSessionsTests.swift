import Foundation
import Testing

@testable import SharedBroker
@testable import SharedBrokerProtocol
@testable import SharedBrokerServer

@Suite struct ClientSessionsTests {
  /// A connection that said HELLO as one client, then as another, speaks for the second: the
  /// first one's session expiring does not unbind it (a broker once answered `ERROR hello` to
  /// every request of such a connection once the first client expired).
  @Test func aConnectionKeepsTheClientItSaidHelloAsLast() {
    var sessions = ClientSessions(timeout: .seconds(2))
    let peer = Data("connection".utf8)
    sessions.heard(from: "first", peer: peer, owner: nil, at: .zero)
    sessions.heard(from: "second", peer: peer, owner: nil, at: .seconds(2))
    #expect(sessions.expire(at: .seconds(3)) == ["first"])
    #expect(sessions.heard(fromPeer: peer, at: .seconds(3)) == "second")
  }
}
