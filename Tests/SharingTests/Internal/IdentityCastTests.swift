import Sharing
import Testing

@Suite struct IdentityCastTests {
  class Animal: @unchecked Sendable {
    let name: String
    init(name: String) { self.name = name }
  }
  final class Dog: Animal, @unchecked Sendable {}

  /// The same type comes back as it was, values with references included; a subclass, an
  /// optional or an existential goes through the runtime's cast, as `as!` did.
  @Test func castsToTheOwnTypeAndFallsBackToTheRuntime() {
    #expect(identityCast([1, 2, 3], to: [Int].self) == [1, 2, 3])
    #expect(identityCast("a longer string than fits inline", to: String.self).count == 32)
    let dog = Dog(name: "Rex")
    #expect(identityCast(dog, to: Dog.self) === dog)
    #expect(identityCast(dog, to: Animal.self).name == "Rex")
    #expect(identityCast(7, to: Int?.self) == 7)
    #expect(identityCast(7, to: Any.self) as? Int == 7)
  }
}
