import Composable

// The `@Shared` article's snippets as the article writes them. Where it elides code ("// ..."), the
// elision is filled in below the snippet; the snippet's own lines are unchanged. Types of the
// same name live in separate namespaces.

/// Parent and child sharing one `@Shared` count by reference.
enum ParentChild {
  @Reducer
  struct ParentFeature {
    @ObservableState
    struct State {
      @Shared var count: Int  // 1
      var child: ChildFeature.State
      // Other properties
    }
    // ...
    enum Action {
      case presentButtonTapped
      case child(ChildFeature.Action)
    }

    var body: some ReducerOf<Self> {
      Scope(state: \.child, action: \.child) { ChildFeature() }
      Reduce { state, action in
        switch action {
        case .presentButtonTapped:
          state.child = ChildFeature.State(count: state.$count)  // 3
          // ...
          return .none
        case .child:
          return .none
        }
      }
    }
  }

  @Reducer
  struct ChildFeature {
    @ObservableState
    struct State {
      @Shared var count: Int  // 2
      // Other properties
    }
    // ...
    enum Action { case incrementButtonTapped }

    var body: some ReducerOf<Self> {
      Reduce { state, action in
        state.$count.withLock { $0 += 1 }
        return .none
      }
    }
  }

  /// The first snippet exactly, with nothing filled in: TCA makes it an empty feature.
  @Reducer
  struct ParentFeatureAsWritten {
    @ObservableState
    struct State {
      @Shared var count: Int  // 1
      var child: ChildFeature.State
      // Other properties
    }
    // ...
  }
}

/// A child that shares the count app-wide by key and observes it with a publisher.
enum AppWide {
  @Reducer
  struct ChildFeature {
    @ObservableState
    struct State {
      @Shared(.inMemory("count")) var count = 0  // 1
      // Other properties
    }
    // ...
    enum Action {
      case onAppear
      case countUpdated(Int)
    }

    var body: some ReducerOf<Self> {
      Reduce { state, action in
        switch action {
        case .onAppear:
          return .publisher {  // 2
            state.$count.publisher
              .map(Action.countUpdated)
          }

        case .countUpdated(let count):
          // Do something with count
          _ = count
          return .none
        }
      }
    }
  }

  /// The article's warning (3 ❌): writing the observed value from its own publisher loops.
  @Reducer
  struct LoopingChildFeature {
    @ObservableState
    struct State {
      @Shared(.inMemory("count")) var count = 0
    }
    enum Action {
      case onAppear
      case countUpdated(Int)
    }

    var body: some ReducerOf<Self> {
      Reduce { state, action in
        switch action {
        case .onAppear:
          return .publisher {
            state.$count.publisher
              .map(Action.countUpdated)
          }

        case .countUpdated(let count):
          state.count = count + 1  // 3 ❌
          return .none
        }
      }
    }
  }
}

/// The article's custom initializers, each a `State` of its own.
enum FromTheParent {
  public struct State {
    @Shared public var count: Int
    // other fields

    public init(count: Shared<Int> /* other fields */) {  // 1
      self._count = count
      // other assignments
    }
  }
}

enum FromAValue {
  public struct State {
    @Shared public var count: Int
    // other fields

    public init(count: Int /* other fields */) {  // 1
      self._count = Shared(count)  // 2
      // other assignments
    }
  }
}

enum Persisted {
  public struct State {
    @Shared public var count: Int  // 2
    // other fields

    public init(count: Int /* other fields */) {  // 1
      self._count = Shared(wrappedValue: count, .appStorage("count"))  // 3
      // other assignments
    }
  }
}

enum PersistedLazily {
  public struct State {
    @Shared public var count: Int
    // other fields

    public init(count: @autoclosure () -> Int /* other fields */) {
      self._count = Shared(wrappedValue: count(), .appStorage("count"))
      // other assignments
    }
  }
}

// The article's states are not Equatable; a test store needs them to be, as in TCA.
extension ParentChild.ParentFeature.State: Equatable {}
extension ParentChild.ChildFeature.State: Equatable {}
extension AppWide.ChildFeature.State: Equatable {}
