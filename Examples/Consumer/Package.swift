// swift-tools-version: 6.1
import Foundation
import PackageDescription

/// A path dependency is known by its directory's name, whatever the checkout is called.
let sharedMirror = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

/// `Scripts/consumer-check.sh` builds this package once as a user who forgot
/// ComposableTestSupport would (`CONSUMER_SETUP=naive`), to prove such a run fails.
let testSupport: Target.Dependency =
  ProcessInfo.processInfo.environment["CONSUMER_SETUP"] == "naive"
  ? .product(name: "Composable", package: sharedMirror)
  : .product(name: "ComposableTestSupport", package: sharedMirror)

// A package that uses SharedMirror the way a user's does: a feature with a mirrored value, and
// its tests with TestStore and BrokerFixture. `make test` runs it (Scripts/consumer-check.sh).
let package = Package(
  name: "Consumer",
  platforms: [.macOS(.v14)],
  dependencies: [.package(path: "../..")],
  targets: [
    .target(
      name: "Tally",
      dependencies: [
        .product(name: "Composable", package: sharedMirror),
        .product(name: "SharedBroker", package: sharedMirror),
      ]
    ),
    // An app that only mirrors a value: it links the client, none of the broker's server.
    .executableTarget(
      name: "tally",
      dependencies: [
        "Tally",
        .product(name: "Composable", package: sharedMirror),
        .product(name: "SharedBroker", package: sharedMirror),
      ]
    ),
    .testTarget(
      name: "TallyTests",
      dependencies: [
        "Tally",
        testSupport,
        .product(name: "SharedBrokerTesting", package: sharedMirror),
      ]
    ),
  ]
)
