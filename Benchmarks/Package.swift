// swift-tools-version: 6.1
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
    .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    // Only the malloc interposer: the runtime interposer's package is not on this machine.
    .package(
      url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
  ],
  targets: [
    // `Store.send` and its reducers in one process, measured by ordo-one's benchmark package
    // (`swift package benchmark`), which counts allocations too.
    .executableTarget(
      name: "ComposableBenchmarks",
      dependencies: [
        .product(name: "Composable", package: main),
        .product(name: "Benchmark", package: "benchmark"),
      ],
      path: "Benchmarks/ComposableBenchmarks",
      plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
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
        .product(name: "Histogram", package: "hdrhistogram-swift"),
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
