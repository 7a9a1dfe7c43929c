// Link this product into every test target that uses `TestStore`:
//
//     .testTarget(
//       name: "MyFeatureTests",
//       dependencies: [
//         "MyFeature",
//         .product(name: "ComposableTestSupport", package: "SharedMirror"),
//       ]
//     )
//
// On Linux, failures reach Swift Testing and XCTest only through IssueReportingTestSupport,
// which this product links. A `TestStore` in a test process without it stops the run with a
// message saying to add this product, rather than letting every assertion pass.

/// Composable, for test targets that import this module instead.
@_exported public import Composable
