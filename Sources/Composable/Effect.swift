public import ConcurrencyExtras
public import OpenCombine

/// A unit of work that a reducer hands back to the store: side effects that may feed actions
/// back into the system.
///
/// Effects are plain values built from static factories (``none``, ``send(_:)``,
/// ``run(priority:operation:catch:fileID:filePath:line:column:)``, ``publisher(_:)``) and combined
/// with ``merge(_:)-(Effect<Action>...)``, ``concatenate(_:)-(Effect<Action>...)``, ``map(_:)`` and
/// ``cancellable(id:cancelInFlight:)``. The store interprets them; nothing runs until it does.
///
/// ```swift
/// case .factButtonTapped:
///   return .run { [count = state.count] send in
///     await send(.factResponse(try await numberFact(count)))
///   }
/// ```
public struct Effect<Action>: Sendable {
  @usableFromInline let operation: Operation

  @usableFromInline init(operation: Operation) {
    self.operation = operation
  }

  /// The instruction tree the store's effect runner interprets.
  @usableFromInline indirect enum Operation: Sendable {
    case none
    case send(UncheckedSendable<Action>)
    case publisher(UncheckedSendable<AnyPublisher<Action, Never>>)
    case run(TaskPriority?, @Sendable (Send<Action>) async -> Void)
    case cancel(AnyHashableSendable)
    case cancellable(id: AnyHashableSendable, cancelInFlight: Bool, Operation)
    case throttle(id: AnyHashableSendable, window: Operation, Operation)
    case merge([Operation])
    case concatenate([Operation])
  }
}

/// A convenience for naming an ``Effect`` by the reducer that returns it.
public typealias EffectOf<R: Reducer> = Effect<R.Action>

// MARK: - Creating effects

extension Effect {
  /// An effect that does nothing and completes immediately.
  public static var none: Self { Self(operation: .none) }

  /// An effect that feeds `action` straight back into the store, synchronously.
  ///
  /// The action is buffered behind the action being reduced and runs right after it, in order.
  /// Prefer a plain helper method for sharing logic: every action costs a full trip through the
  /// reducer tree.
  ///
  /// - Parameter action: The action to send.
  /// - Returns: An effect.
  public static func send(_ action: Action) -> Self {
    Self(operation: .send(UncheckedSendable(action)))
  }

  /// Wraps an asynchronous unit of work that can send any number of actions.
  ///
  /// ```swift
  /// return .run { send in
  ///   for await value in values { await send(.received(value)) }
  /// } catch: { error, send in
  ///   await send(.failed(error.localizedDescription))
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - priority: The priority of the task that runs the work.
  ///   - operation: The work; call `send` to feed actions back.
  ///   - handler: Turns an error thrown by `operation` into actions. Without it, a thrown error
  ///     other than cancellation is reported as an issue.
  ///   - fileID: The calling file's ID, where a failure is reported.
  ///   - filePath: The calling file's path, where a failure is reported.
  ///   - line: The calling line, where a failure is reported.
  ///   - column: The calling column, where a failure is reported.
  /// - Returns: An effect.
  public static func run(
    priority: TaskPriority? = nil,
    operation: @escaping @Sendable (_ send: Send<Action>) async throws -> Void,
    catch handler: (@Sendable (_ error: any Error, _ send: Send<Action>) async -> Void)? = nil,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
  ) -> Self {
    Self(
      operation: .run(priority) { send in
        do {
          try await operation(send)
        } catch is CancellationError {
          return
        } catch {
          guard let handler else {
            reportUnhandledEffectError(
              error, fileID: fileID, filePath: filePath, line: line, column: column
            )
            return
          }
          await handler(error, send)
        }
      }
    )
  }

  /// Wraps an OpenCombine publisher whose outputs are sent back into the store.
  ///
  /// Values emitted on the main thread are delivered synchronously; values from other threads
  /// hop to the main actor first.
  ///
  /// ```swift
  /// return .publisher { state.$count.publisher.map(Action.countUpdated) }
  /// ```
  ///
  /// - Parameter createPublisher: Builds the publisher.
  /// - Returns: An effect.
  public static func publisher<P: Publisher>(_ createPublisher: () -> P) -> Self
  where P.Output == Action, P.Failure == Never {
    Self(operation: .publisher(UncheckedSendable(createPublisher().eraseToAnyPublisher())))
  }
}

// MARK: - Combining effects

extension Effect {
  /// Runs several effects at once.
  ///
  /// - Parameter effects: The effects to run concurrently.
  /// - Returns: An effect that finishes when all of them have.
  public static func merge(_ effects: Self...) -> Self {
    merge(effects)
  }

  /// Runs a sequence of effects at once.
  ///
  /// - Parameter effects: The effects to run concurrently.
  /// - Returns: An effect that finishes when all of them have.
  public static func merge(_ effects: some Sequence<Self>) -> Self {
    Self(operation: .merge(effects.map(\.operation).filter { !$0.isNone }))
  }

  /// Runs several effects one after the other, each starting when the previous one finished.
  ///
  /// - Parameter effects: The effects to run in order.
  /// - Returns: An effect.
  public static func concatenate(_ effects: Self...) -> Self {
    concatenate(effects)
  }

  /// Runs a sequence of effects one after the other.
  ///
  /// - Parameter effects: The effects to run in order.
  /// - Returns: An effect.
  public static func concatenate(_ effects: some Sequence<Self>) -> Self {
    Self(operation: .concatenate(effects.map(\.operation).filter { !$0.isNone }))
  }

  /// Runs this effect and `other` at once.
  ///
  /// - Parameter other: Another effect.
  /// - Returns: An effect that finishes when both have.
  public func merge(with other: Self) -> Self {
    .merge(self, other)
  }

  /// Runs `other` after this effect finishes.
  ///
  /// - Parameter other: Another effect.
  /// - Returns: An effect.
  public func concatenate(with other: Self) -> Self {
    .concatenate(self, other)
  }

  /// Transforms every action this effect sends, e.g. to embed a child's action in its parent's.
  ///
  /// - Parameter transform: Maps a child action to a new action.
  /// - Returns: An effect of the new action type.
  public func map<T>(_ transform: @escaping @Sendable (Action) -> T) -> Effect<T> {
    Effect<T>(operation: operation.map(transform))
  }
}

extension Effect.Operation {
  @usableFromInline var isNone: Bool {
    if case .none = self { return true }
    return false
  }

  func map<T>(_ transform: @escaping @Sendable (Action) -> T) -> Effect<T>.Operation {
    switch self {
    case .none:
      return .none
    case let .send(action):
      return .send(UncheckedSendable(transform(action.value)))
    case let .publisher(publisher):
      return .publisher(UncheckedSendable(publisher.value.map(transform).eraseToAnyPublisher()))
    case let .run(priority, operation):
      return .run(priority) { send in
        await operation(Send { action in send(transform(action)) })
      }
    case let .cancel(id):
      return .cancel(id)
    case let .cancellable(id, cancelInFlight, operation):
      return .cancellable(id: id, cancelInFlight: cancelInFlight, operation.map(transform))
    case let .throttle(id, window, operation):
      return .throttle(id: id, window: window.map(transform), operation.map(transform))
    case let .merge(operations):
      return .merge(operations.map { $0.map(transform) })
    case let .concatenate(operations):
      return .concatenate(operations.map { $0.map(transform) })
    }
  }
}
