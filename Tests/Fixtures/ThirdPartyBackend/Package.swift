// swift-tools-version:6.2
import Foundation
import PackageDescription

// A backend written outside swift-secitem-linux, as a third party writes one: its store
// depends on SecItemCore only, its tests on the conformance kit only. The project's
// scripts/test builds and tests this package to prove that neither needs libsecret,
// OpenSSL or libpq.
//
// A real backend package depends on the project by URL and names it
// "swift-secitem-linux"; this one lives inside the checkout, and SwiftPM names a path
// dependency after its directory, whatever that is called.
let checkout = URL(fileURLWithPath: Context.packageDirectory + "/../../..").standardizedFileURL
let secItem = checkout.lastPathComponent.lowercased()

let package = Package(
    name: "ThirdPartyBackend",
    products: [.library(name: "ArrayBackend", targets: ["ArrayBackend"])],
    dependencies: [.package(path: checkout.path)],
    targets: [
        .target(name: "ArrayBackend", dependencies: [.product(name: "SecItemCore", package: secItem)]),
        .testTarget(
            name: "ArrayBackendTests",
            dependencies: ["ArrayBackend", .product(name: "SecItemConformance", package: secItem)]
        ),
    ]
)
