// swift-tools-version: 6.0
import Foundation
import PackageDescription

/// A path dependency is known by its directory's name, whatever the checkout is called.
let main = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().lastPathComponent

// Benchmarks live in their own package (depending on the main one by path) so the main build
// and `make test` stay fast. Run with `make bench`.
let package = Package(
  name: "SharedMirrorBenchmarks",
  platforms: [.macOS(.v14)],
  dependencies: [
    .package(path: ".."),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
  ],
  targets: [
    .executableTarget(
      name: "composable-benchmarks",
      dependencies: [.product(name: "Composable", package: main)],
      swiftSettings: [.unsafeFlags(["-Ounchecked"], .when(configuration: .release))]
    ),
    .executableTarget(
      name: "broker-benchmarks",
      dependencies: [
        .product(name: "SharedBroker", package: main),
        .product(name: "SharedBrokerCluster", package: main),
        .product(name: "SharedBrokerServer", package: main),
        .product(name: "Sharing", package: main),
        .product(name: "ZeroMQ", package: main),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
    .executableTarget(
      name: "callgrind-peer",
      dependencies: [
        .product(name: "SharedBroker", package: main),
        .product(name: "SharedBrokerServer", package: main),
        .product(name: "Sharing", package: main),
        .product(name: "Logging", package: "swift-log"),
      ]
    ),
  ]
)
