import Testing

@testable import SharedBrokerServer

/// The connection budget alone: accepted and closed connections in, decisions out.
@Suite struct ConnectionBudgetTests {
  @Test func connectionsPastTheBudgetAreRefusedWithOneLogLinePerInterval() {
    var budget = ConnectionBudget(clients: 2, logInterval: .seconds(10))
    #expect(budget.accepted(10, on: .router, at: .seconds(1)) == .keep)
    #expect(budget.accepted(11, on: .router, at: .seconds(1)) == .keep)
    // Each listener has its own budget: a client's SUB is not refused for its DEALER.
    #expect(budget.accepted(12, on: .publisher, at: .seconds(1)) == .keep)
    #expect(budget.accepted(13, on: .router, at: .seconds(2)) == .refuse(log: true))
    budget.logged()
    #expect(budget.accepted(14, on: .router, at: .seconds(3)) == .refuse(log: false))
    #expect(budget.refused == 2 && budget.refusedSinceLog == 1)
    // Refused connections closing free nothing; a kept one closing makes room.
    budget.disconnected(13, on: .router)
    #expect(budget.accepted(15, on: .router, at: .seconds(4)) == .refuse(log: false))
    budget.disconnected(10, on: .router)
    #expect(budget.kept(.router) == 1)
    #expect(budget.accepted(16, on: .router, at: .seconds(5)) == .keep)
    #expect(budget.accepted(17, on: .router, at: .seconds(12)) == .refuse(log: true))
  }

  @Test func theCapacityLeavesRoomForTheRestOfTheProcess() {
    #expect(ConnectionBudget.clients(openFileLimit: 1_024, inUse: 20) == 470)
    #expect(ConnectionBudget.clients(openFileLimit: 50, inUse: 20) == 1)
  }
}
