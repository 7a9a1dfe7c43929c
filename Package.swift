// swift-tools-version: 6.1
import PackageDescription

/// Swift 6 mode plus the upcoming features the style guide asks for.
let settings: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
  .enableUpcomingFeature("MemberImportVisibility"),
]

import CompilerPluginSupport
import Foundation

/// The image's build (Dockerfile, Scripts/image-check.sh) sets SHARED_MIRROR_RUNTIME_BUILD and
/// leaves the macro tests out: swift-macro-testing brings swift-snapshot-testing, which turns on
/// swift-custom-dump's FoundationNetworking trait for the whole graph, and every program would
/// then link libcurl, which the runtime image does not have.
let runtimeBuild = ProcessInfo.processInfo.environment["SHARED_MIRROR_RUNTIME_BUILD"] != nil

/// Test-only packages and targets, left out of the image's build.
let macroTesting: [Package.Dependency] =
  runtimeBuild ? [] : [.package(url: "https://github.com/pointfreeco/swift-macro-testing", from: "0.7.0")]
let macroTests: [Target] =
  runtimeBuild
  ? []
  : [
    .testTarget(
      name: "ComposableMacrosTests",
      dependencies: [
        "ComposableMacros",
        .product(name: "MacroTesting", package: "swift-macro-testing"),
      ],
      swiftSettings: settings
    ),
    .testTarget(
      name: "QuickJSONMacrosTests",
      dependencies: [
        "QuickJSONMacros",
        .product(name: "MacroTesting", package: "swift-macro-testing"),
        .product(name: "SwiftSyntax", package: "swift-syntax"),
        .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
      ],
      swiftSettings: settings
    ),
  ]

/// What a compiler plugin of macros links.
let macroPlugin: [Target.Dependency] = [
  .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
  .product(name: "SwiftDiagnostics", package: "swift-syntax"),
  .product(name: "SwiftSyntax", package: "swift-syntax"),
  .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
  .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
]

let package = Package(
  name: "SharedMirror",
  platforms: [.macOS(.v14)],
  products: [
    .library(name: "Sharing", targets: ["Sharing"]),
    .library(name: "Composable", targets: ["Composable"]),
    .library(name: "ComposableTestSupport", targets: ["ComposableTestSupport"]),
    .library(name: "CaseStudies", targets: ["CaseStudies"]),
    .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
    .library(name: "SharedBrokerProtocol", targets: ["SharedBrokerProtocol"]),
    .library(name: "SharedBroker", targets: ["SharedBroker"]),
    .library(name: "SharedBrokerServer", targets: ["SharedBrokerServer"]),
    .library(name: "SharedBrokerTesting", targets: ["SharedBrokerTesting"]),
    .library(name: "SharedBrokerCluster", targets: ["SharedBrokerCluster"]),
    .executable(name: "broker", targets: ["broker"]),
    .executable(name: "counter", targets: ["counter"]),
    .executable(name: "profile", targets: ["profile"]),
    .executable(name: "shared-state-demo", targets: ["shared-state-demo"]),
    .executable(name: "web", targets: ["web"]),
  ],
  dependencies: [
    .package(url: "https://github.com/pointfreeco/swift-case-paths", from: "1.10.0"),
    .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
    .package(url: "https://github.com/pointfreeco/swift-concurrency-extras", from: "1.4.3"),
    // Without their FoundationNetworking trait: it links libcurl into every program, which the
    // runtime image does not have and nothing here uses.
    .package(url: "https://github.com/pointfreeco/swift-custom-dump", from: "1.7.3", traits: []),
    .package(
      url: "https://github.com/pointfreeco/swift-dependencies", from: "1.17.1",
      traits: ["Clocks", "Foundation"]
    ),
    .package(url: "https://github.com/pointfreeco/swift-identified-collections", from: "1.1.1"),
    .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.13.1"),
    .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
    // etcd's JSON gateway, for brokers that share their state (SharedBrokerCluster).
    .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    // The broker's counters, and `broker --metrics` serving them in Prometheus' text format.
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    // swift-case-paths and swift-dependencies already build it for their own macros.
    .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.0"..<"604.0.0"),
    // The web front (`web`) alone: its page and the tabs' WebSockets.
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
    // `make docs`: the `generate-documentation` command for the DocC catalogs in Sources.
    .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
  ] + macroTesting,
  targets: [
    .target(
      name: "Sharing",
      dependencies: [
        .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
        .product(name: "CustomDump", package: "swift-custom-dump"),
        .product(name: "Dependencies", package: "swift-dependencies"),
        .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
        .product(name: "OpenCombine", package: "OpenCombine"),
      ],
      swiftSettings: settings
    ),
    // What the package's macros ask of declarations alike.
    .target(
      name: "MacroSupport",
      dependencies: [.product(name: "SwiftSyntax", package: "swift-syntax")],
      swiftSettings: settings
    ),
    .macro(
      name: "ComposableMacros",
      dependencies: ["MacroSupport"] + macroPlugin,
      swiftSettings: settings
    ),
    .target(
      name: "Composable",
      dependencies: [
        "ComposableMacros",
        "Sharing",
        .product(name: "CasePaths", package: "swift-case-paths"),
        .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
        .product(name: "CustomDump", package: "swift-custom-dump"),
        .product(name: "Dependencies", package: "swift-dependencies"),
        .product(name: "DequeModule", package: "swift-collections"),
        .product(name: "OrderedCollections", package: "swift-collections"),
        .product(name: "IdentifiedCollections", package: "swift-identified-collections"),
        .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
        .product(name: "OpenCombine", package: "OpenCombine"),
      ],
      swiftSettings: settings
    ),
    .target(
      name: "ComposableTestSupport",
      dependencies: [
        "Composable",
        .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
      ],
      swiftSettings: settings
    ),
    .systemLibrary(
      name: "CZeroMQ",
      providers: [.apt(["libzmq3-dev"])]
    ),
    .target(
      name: "ZeroMQ",
      dependencies: ["CZeroMQ"],
      swiftSettings: settings
    ),
    .macro(
      name: "QuickJSONMacros",
      dependencies: ["MacroSupport"] + macroPlugin,
      swiftSettings: settings
    ),
    .target(
      name: "QuickJSON",
      swiftSettings: settings
    ),
    // The wire protocol that clients and brokers share: messages, frames, the I/O thread.
    .target(
      name: "SharedBrokerProtocol",
      swiftSettings: settings
    ),
    // The client: `.broker` keys and BrokerClient. An app that mirrors values links this, not
    // the server's metrics and service lifecycle.
    .target(
      name: "SharedBroker",
      dependencies: [
        "QuickJSON",
        "QuickJSONMacros",
        "Sharing",
        "SharedBrokerProtocol",
        "ZeroMQ",
        .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
        .product(name: "Dependencies", package: "swift-dependencies"),
        .product(name: "DequeModule", package: "swift-collections"),
        .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: settings
    ),
    // The broker: BrokerServer around its machine, the log, the cluster driver, metrics.
    .target(
      name: "SharedBrokerServer",
      dependencies: [
        "QuickJSON",
        "SharedBrokerProtocol",
        "ZeroMQ",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "OrderedCollections", package: "swift-collections"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ],
      swiftSettings: settings
    ),
    .target(
      name: "Etcd",
      dependencies: [
        "QuickJSON",
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
      ],
      swiftSettings: settings
    ),
    .target(
      name: "SharedBrokerCluster",
      dependencies: [
        "Etcd",
        "SharedBrokerServer",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "NIOCore", package: "swift-nio"),
      ],
      swiftSettings: settings
    ),
    .target(
      name: "SharedBrokerTesting",
      dependencies: ["SharedBroker", "SharedBrokerServer", "ZeroMQ"],
      swiftSettings: settings
    ),
    .target(
      name: "CurveCommandLine",
      dependencies: [
        "SharedBroker",
        "ZeroMQ",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      swiftSettings: settings
    ),
    .executableTarget(
      name: "broker",
      dependencies: [
        "CurveCommandLine",
        "Etcd",
        "SharedBroker",
        "SharedBrokerServer",
        "SharedBrokerCluster",
        "ZeroMQ",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "UnixSignals", package: "swift-service-lifecycle"),
      ],
      swiftSettings: settings
    ),
    .target(
      name: "MirrorApps",
      dependencies: [
        "CaseStudies",
        "Composable",
        "CurveCommandLine",
        "SharedBroker",
        "ZeroMQ",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "UnixSignals", package: "swift-service-lifecycle"),
      ],
      swiftSettings: settings
    ),
    .executableTarget(
      name: "web",
      dependencies: [
        "CurveCommandLine",
        "SharedBroker",
        "SharedBrokerProtocol",
        "ZeroMQ",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
      ],
      resources: [.embedInCode("Page")],
      swiftSettings: settings
    ),
    .executableTarget(
      name: "counter",
      dependencies: [
        "CurveCommandLine", "MirrorApps", "SharedBroker",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      swiftSettings: settings
    ),
    .executableTarget(
      name: "profile",
      dependencies: [
        "CurveCommandLine", "MirrorApps", "SharedBroker",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      swiftSettings: settings
    ),
    .target(
      name: "CaseStudies",
      dependencies: ["Composable"],
      swiftSettings: settings
    ),
    .executableTarget(
      name: "shared-state-demo",
      dependencies: [
        "CaseStudies",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      swiftSettings: settings
    ),
    .target(
      name: "TestSupport",
      dependencies: [
        "Etcd",
        "SharedBrokerTesting",
        .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
        .product(name: "Subprocess", package: "swift-subprocess"),
      ],
      path: "Tests/TestSupport",
      swiftSettings: settings
    ),
    .testTarget(
      name: "SharingTests",
      dependencies: [
        "TestSupport",
        "Sharing",
        .product(name: "Clocks", package: "swift-clocks"),
        .product(name: "DependenciesTestSupport", package: "swift-dependencies"),
      ],
      swiftSettings: settings
    ),
    .testTarget(
      name: "ZeroMQTests",
      dependencies: ["ZeroMQ"],
      swiftSettings: settings
    ),
    .testTarget(
      name: "SharedBrokerTests",
      dependencies: [
        "Composable",
        "Etcd",
        "QuickJSON",
        "SharedBroker",
        "SharedBrokerCluster",
        "SharedBrokerProtocol",
        "SharedBrokerServer",
        "SharedBrokerTesting",
        "TestSupport",
        .product(name: "Clocks", package: "swift-clocks"),
        .product(name: "DependenciesTestSupport", package: "swift-dependencies"),
        .product(name: "OpenCombine", package: "OpenCombine"),
      ],
      swiftSettings: settings
    ),
    .testTarget(
      name: "SimulationTests",
      dependencies: [
        "QuickJSON",
        "SharedBroker",
        "SharedBrokerProtocol",
        "SharedBrokerServer",
        "TestSupport",
        "ZeroMQ",
        .product(name: "HeapModule", package: "swift-collections"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "OpenCombine", package: "OpenCombine"),
      ],
      swiftSettings: settings
    ),
    .testTarget(
      name: "MirrorAppsTests",
      dependencies: [
        "CurveCommandLine", "MirrorApps", "SharedBroker", "Sharing", "TestSupport", "ZeroMQ",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Dependencies", package: "swift-dependencies"),
      ],
      swiftSettings: settings
    ),
    .testTarget(
      name: "ComposableTests",
      dependencies: [
        "TestSupport",
        "Composable",
        .product(name: "Clocks", package: "swift-clocks"),
        .product(name: "CustomDump", package: "swift-custom-dump"),
        .product(name: "DependenciesTestSupport", package: "swift-dependencies"),
      ],
      swiftSettings: settings
    ),
    .testTarget(
      name: "CaseStudiesTests",
      dependencies: [
        "TestSupport",
        "CaseStudies",
        .product(name: "Clocks", package: "swift-clocks"),
        .product(name: "DependenciesTestSupport", package: "swift-dependencies"),
      ],
      swiftSettings: settings
    ),
  ] + macroTests
)
