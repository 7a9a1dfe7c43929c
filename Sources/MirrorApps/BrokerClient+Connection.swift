public import Composable
public import SharedBroker

extension BrokerClient {
  /// An effect that reports every change of the connection state, for a status line.
  ///
  /// - Parameter action: Wraps a state in the feature's action.
  /// - Returns: A long-running effect.
  public func connectionEffect<Action>(
    _ action: @escaping @Sendable (ConnectionState) -> Action
  ) -> Effect<Action> {
    .run { [self] send in
      for await connection in connectionStates { await send(action(connection)) }
    }
  }
}
