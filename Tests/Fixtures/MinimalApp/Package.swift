// swift-tools-version:6.2
import Foundation
import PackageDescription

// An app that wants the encrypted file and the memory stores only: it depends on
// SecItem with no traits, so neither the Secret Service (libsecret, GLib), polkit
// (GIO) nor PostgreSQL (libpq) is compiled or linked. The project's MinimalTraitsTests
// builds it with pkg-config seeing sqlite3 alone and checks the executable with ldd.
//
// A real app depends on the project by URL and names it "swift-secitem-linux"; this
// one lives inside the checkout, and SwiftPM names a path dependency after its directory.
let checkout = URL(fileURLWithPath: Context.packageDirectory + "/../../..").standardizedFileURL
let secItem = checkout.lastPathComponent.lowercased()

// SECITEM_FIXTURE_TRAITS=SecretService,… builds it with those traits instead (scripts/check-traits:
// each optional backend alone, as CI does).
let traits = (ProcessInfo.processInfo.environment["SECITEM_FIXTURE_TRAITS"] ?? "").split(separator: ",").map {
    Package.Dependency.Trait(name: String($0))
}

let package = Package(
    name: "MinimalApp",
    dependencies: [.package(path: checkout.path, traits: Set(traits))],
    targets: [
        .executableTarget(name: "MinimalApp", dependencies: [.product(name: "SecItem", package: secItem)])
    ]
)
