// swift-tools-version:6.2
import PackageDescription

// C targets: every warning clang's -Wall -Wextra name, as errors (SE-0480 settings, not unsafe flags).
let cWarnings: [CSetting] = [.enableWarning("all"), .enableWarning("extra"), .treatAllWarnings(as: .error)]

// Command-line programs start the Swift runtime and Foundation from static archives (as
// `swift build --static-swift-stdlib` would, but for these executables only, so a plain
// `swift build` gives users the fast-starting command): no dynamic loading of libswiftCore,
// libFoundation*, libdispatch and ICU's data at each start.
// `-static-stdlib` on the executable's own compile too: its module then imports the static
// SDK's Foundation, whose autolink entries name the archives static Foundation needs.
// The runtime's C++ library is linked statically as well: Linker/static-libstdc++ holds a
// linker script named libstdc++.so that the runtime's `-lstdc++` finds first.
let staticSwiftRuntime: (swift: [SwiftSetting], linker: [LinkerSetting]) = (
    [.unsafeFlags(["-static-stdlib"])],
    [.unsafeFlags([
        "-static-stdlib", "-use-ld=bfd", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
        "-L", Context.packageDirectory + "/Linker/static-libstdc++",
    ])]
)

let package = Package(
    name: "swift-secitem-linux",
    products: [
        .library(name: "SecItem", targets: ["SecItem"]),
        .library(name: "SecItemKeychain", targets: ["SecItemKeychain"]),
        .library(name: "SecItemCore", targets: ["SecItemCore"]),
        .library(name: "SecItemTools", targets: ["SecItemTools"]),
        .library(name: "SecItemConformance", targets: ["SecItemConformance"]),
        .library(name: "SecItemMemory", targets: ["SecItemMemory"]),
        .library(name: "SecItemSQLite", targets: ["SecItemSQLite"]),
        .library(name: "SecItemSecretService", targets: ["SecItemSecretService"]),
        .library(name: "SecItemPolkit", targets: ["SecItemPolkit"]),
        .library(name: "SecItemPostgreSQL", targets: ["SecItemPostgreSQL"]),
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        .executable(name: "secitem", targets: ["secitem"]),
        .executable(name: "git-credential-secitem", targets: ["git-credential-secitem"]),
    ],
    // Optional backends (SwiftPM traits, docs/traits.md). The defaults are all of them, so
    // the README's examples work as written; an app that wants the encrypted file and the
    // memory stores only depends on this package with `traits: []` and then needs no
    // libsecret, GLib or libpq headers and links none of them (MinimalTraitsTests).
    traits: [
        .trait(name: "SecretService", description: "The Secret Service backend (libsecret, GLib): gnome-keyring, KWallet, KeePassXC."),
        .trait(name: "Polkit", description: "Access control on a desktop: logind's session lock and polkit's user presence (GIO)."),
        .trait(name: "PostgreSQL", description: "The PostgreSQL backend (libpq-dev's header at build time, libpq5 opened on first use)."),
        .default(enabledTraits: ["SecretService", "Polkit", "PostgreSQL"]),
    ],
    targets: [
        // MARK: Core and the module users import
        // `import SecItem` re-exports SecItemAPI whole (Sources/SecItem/Exports.swift), and
        // SecItemAPI re-exports SecItemSecurity: Apple's names and `SecItem…` names only, so
        // an app's own `Keychain` or `ItemClass` never clashes (docs/architecture.md, "Modules").
        // Apple's Security names: kSec…, errSec…, OSStatus, the CF types, SecItemError,
        // SecAccessControl, SecKey/SecCertificate/SecIdentity as values. Foundation only.
        .target(name: "SecItemSecurity", path: "Sources/SecItemSecurity"),
        // The item model backends work on: StoredItem, ItemQuery, AttributeValue, AccessGroups,
        // the access gate, the parsing of query dictionaries. Generic names: never re-exported by SecItem.
        .target(name: "SecItemModel", dependencies: ["SecItemSecurity"], path: "Sources/SecItemModel"),
        // The `SecItem…` types: SecItemClient, the SecItemBackend protocol and its capabilities,
        // SecItemConfiguration and the settings. Re-exports SecItemSecurity.
        .target(name: "SecItemAPI", dependencies: ["SecItemSecurity", "SecItemModel", "CSecItemLinkHook"], path: "Sources/SecItemAPI"),
        // The built-in settings' registration hook: the API's weak reference to what SecItem
        // declares, so that the config file knows every built-in key before anything else runs.
        .target(name: "CSecItemLinkHook", path: "Sources/CSecItemLinkHook", cSettings: cWarnings),
        // The backend writer's kit, one import: re-exports the three above, and adds the provider
        // protocol (SecItemBackendProvider, BackendAvailability) and MaintainableStore.
        .target(name: "SecItemCore", dependencies: ["SecItemSecurity", "SecItemModel", "SecItemAPI"], path: "Sources/SecItemCore"),
        .target(
            name: "SecItem",
            dependencies: [
                "SecItemAPI", "SecItemCore", "SecItemMemory", "SecItemSQLite", "SecItemSealedStore",
                .target(name: "SecItemSecretService", condition: .when(traits: ["SecretService"])),
                .target(name: "SecItemPolkit", condition: .when(traits: ["Polkit"])),
                .target(name: "SecItemPostgreSQL", condition: .when(traits: ["PostgreSQL"])),
                "CSecItemKeys",
            ],
            path: "Sources/SecItem"
        ),
        // SecKey, SecCertificate, SecIdentity (issue 25): libcrypto's public-key primitives behind
        // plain C functions, compiled with warnings as errors; Sources/SecItem/Keys calls them.
        .target(
            name: "CSecItemKeys",
            path: "Sources/CSecItemKeys",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror"])],
            linkerSettings: [.linkedLibrary("crypto")]
        ),
        // Operator tooling (export/import, transfer, file maintenance, diagnosis): the CLI
        // and tests import it; apps importing SecItem do not compile it.
        .target(
            name: "SecItemTools",
            dependencies: ["SecItem", "SecItemCore", "SecItemSQLite", "SecItemSealedStore"],
            path: "Sources/SecItemTools"
        ),
        // The typed Swift layer (`Keychain`); re-exports SecItem.
        .target(
            name: "SecItemKeychain",
            dependencies: ["SecItem", "SecItemCore", "SecItemMemory"],
            path: "Sources/SecItemKeychain"
        ),
        // The conformance kit: the core only, so that a backend outside this package runs
        // it without building libsecret, OpenSSL or libpq (ConformanceTests runs it here).
        .target(name: "SecItemConformance", dependencies: ["SecItemCore"], path: "Sources/SecItemConformance"),
        // The command links the Swift runtime and Foundation statically (docs/cli.md, "Start-up"):
        // a shell script calls it once per secret, and loading ~15 shared Swift libraries
        // costs more than the lookup itself.
        .executableTarget(
            name: "secitem",
            dependencies: [
                "SecItem", "SecItemCore", "SecItemTools", "SecItemPolkit", "CSecItemProcess", "SecItemGitCredential", "SecItemSecretService",
            ],
            path: "Sources/secitem",
            swiftSettings: staticSwiftRuntime.swift,
            linkerSettings: staticSwiftRuntime.linker
        ),
        // Process hardening for the command (prctl is variadic; signal handlers belong in C).
        .target(
            name: "CSecItemProcess",
            path: "Sources/CSecItemProcess",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wpedantic", "-Werror"])],
            linkerSettings: [.linkedLibrary("crypto")]
        ),
        // Git's credential helper: the logic, shared by its executable and `secitem credential-helper`.
        .target(
            name: "SecItemGitCredential", dependencies: ["SecItem", "SecItemCore", "CSecItemProcess"],
            path: "Sources/SecItemGitCredential"
        ),
        .executableTarget(
            name: "git-credential-secitem", dependencies: ["SecItemGitCredential"], path: "Sources/git-credential-secitem",
            swiftSettings: staticSwiftRuntime.swift, linkerSettings: staticSwiftRuntime.linker),
        // GLib, GIO and libsecret opened with dlopen on first use (issue 24): their API as this
        // package uses it, declared without their headers (which only pkg-config finds, and
        // SwiftPM then links the libraries into every program), so a command on the encrypted
        // file maps none of them. Tests/CSecItemGLibCheck checks it against the real headers.
        .target(name: "CSecItemGLib", path: "Sources/CSecItemGLib", cSettings: cWarnings),
        // Access control on a desktop: logind's session lock and polkit's user presence,
        // over a small C client of the system bus (GDBus, loaded on first use).
        .target(name: "CSecItemDBus", dependencies: ["CSecItemGLib"], path: "Sources/CSecItemDBus"),
        .target(
            name: "SecItemPolkit", dependencies: ["SecItemCore", "CSecItemDBus"], path: "Sources/SecItemPolkit",
            exclude: ["polkit"]  // the action file installers copy to /usr/share/polkit-1/actions
        ),

        // MARK: LocalAuthentication (issue 26)
        // Apple's LAContext/LAPolicy/LAError over the access gate: polkit asks the user; an
        // evaluated context covers keychain reads passed it with kSecUseAuthenticationContext.
        .target(name: "LocalAuthentication", dependencies: ["SecItemCore", "SecItemPolkit"], path: "Sources/LocalAuthentication"),

        // MARK: The sealed store: what the file and PostgreSQL backends share
        // Key sources, the key hierarchy, the row codec and the row-set commitment, over
        // libcrypto; no storage of its own (each backend keeps the rows in its tables).
        // libcrypto (OpenSSL 3, Debian's libssl-dev) behind plain C functions, compiled with warnings as errors.
        .target(
            name: "CSecItemCrypto",
            path: "Backends/SealedStore/CSecItemCrypto",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror"])],
            linkerSettings: [.linkedLibrary("crypto")]
        ),
        // The session key cache: the kernel's keyrings through add_key(2)/keyctl(2) by
        // syscall(2) (variadic, so C), no libkeyutils (issue 23).
        .target(
            name: "CSecItemKeyring",
            path: "Backends/SealedStore/CSecItemKeyring",
            cSettings: cWarnings + [.enableWarning("pedantic"), .enableWarning("shadow")]
        ),
        // The tpm2 key source's TPM calls: tpm2-tss opened with dlopen on first use, so no build
        // needs libtss2-dev and no program links it (its headers, when installed, check the declarations).
        .target(name: "CSecItemTSS2", path: "Backends/SealedStore/CSecItemTSS2", cSettings: cWarnings),
        .target(
            name: "SecItemSealedStore",
            dependencies: ["SecItemCore", "CSecItemCrypto", "CSecItemKeyring", "CSecItemTSS2"],
            path: "Backends/SealedStore/SecItemSealedStore"
        ),
        // Its own tests: neither SQLite nor PostgreSQL.
        .testTarget(
            name: "SealedStoreTests",
            dependencies: ["SecItemSealedStore", "SecItemCore", "SecItemConformance", "SecItemTestSupport"],
            path: "Tests/SealedStoreTests"
        ),

        // MARK: Backends
        .target(name: "SecItemMemory", dependencies: ["SecItemCore"], path: "Backends/Memory"),
        .systemLibrary(
            name: "CSecItemSQLite3",
            path: "Backends/SQLite/CSecItemSQLite3",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "SecItemSQLite",
            dependencies: ["SecItemCore", "SecItemSealedStore", "CSecItemSQLite3"],
            path: "Backends/SQLite/SecItemSQLite"
        ),
        // The backend's C code (GLib callbacks, pipelined calls, signal filters):
        // a real C target, compiled with warnings on; libsecret and GLib through CSecItemGLib.
        .target(
            name: "CSecItemLibsecret",
            dependencies: ["CSecItemGLib"],
            path: "Backends/SecretService/CSecItemLibsecret",
            cSettings: cWarnings,
            linkerSettings: [.linkedLibrary("crypto")]  // the encryption session's DH, HKDF and AES (session.c)
        ),
        // The Secret Service backend, and the key sources that need the desktop's D-Bus
        // services (a key item in the login keyring, the Flatpak Secret portal: issue 23),
        // which the sealed store takes through its registration point without linking GLib.
        .target(
            name: "SecItemSecretService",
            dependencies: ["SecItemCore", "CSecItemLibsecret", "SecItemSealedStore"],
            path: "Backends/SecretService/SecItemSecretService"
        ),
        // libpq through dlopen on first use (libpq-dev's header at build time, libpq5 at run
        // time): programs that never open the PostgreSQL backend never map libpq or the
        // Kerberos/LDAP/TLS libraries it pulls in.
        .target(
            name: "CSecItemLibpq",
            path: "Backends/PostgreSQL/CSecItemLibpq",
            cSettings: cWarnings
        ),
        // The sealed store's rows in PostgreSQL tables (no SQLite).
        .target(
            name: "SecItemPostgreSQL",
            dependencies: ["SecItemCore", "SecItemSealedStore", "CSecItemLibpq"],
            path: "Backends/PostgreSQL/SecItemPostgreSQL"
        ),

        // MARK: Examples (built and run by the tests)
        .executableTarget(name: "KeychainHelperExample", dependencies: ["SecItem"], path: "Examples/KeychainHelperExample"),
        .executableTarget(name: "BiometricSaveExample", dependencies: ["SecItem"], path: "Examples/BiometricSaveExample"),
        .executableTarget(name: "SwiftNativeExample", dependencies: ["SecItemKeychain"], path: "Examples/SwiftNativeExample"),

        // MARK: Benchmarks
        .executableTarget(
            name: "SecItemBenchmarks",
            dependencies: [
                "SecItemSealedStore", "SecItem", "SecItemCore", "SecItemMemory", "SecItemSQLite", "CSecItemSQLite3", "CSecItemCrypto", "SecItemSecretService",
                "CSecItemLibsecret", "SecItemPostgreSQL", "CSecItemTSS2",
                "CSecItemLibpq",  // the minimal libpq baseline (MinimalPostgreSQLBaseline.swift)
            ],
            path: "Benchmarks/SecItemBenchmarks"
        ),

        // MARK: Fuzzing (docs/fuzzing.md)
        // One program, one libFuzzer entry point per parser of outside bytes (`--target=NAME`).
        // A plain build makes a replay program (runs files through a target, no libFuzzer);
        // scripts/fuzz builds it with -sanitize=fuzzer,address. The modules it fuzzes are
        // named here only: when a parser moves, this list is the one line to change.
        .executableTarget(
            name: "SecItemFuzz",
            dependencies: [
                "SecItemCore", "SecItemMemory", "SecItemSQLite", "SecItemTools", "SecItemGitCredential", "SecItemKeychain",
                // The Secret Service backend, and its C half's reading of the session replies.
                "SecItemSecretService", "CSecItemLibsecret", "CSecItemGLib",
                // The Apple surface's key and certificate parsers; the sealed store's outside
                // reads (mark file, TPM blob, keyring payload).
                "SecItem", "SecItemSealedStore", "CSecItemKeyring",
            ],
            path: "Fuzz/SecItemFuzz"
        ),

        // MARK: Tests
        // What every test target shares: one child-process runner, one private D-Bus
        // daemon, one query builder (the kit's). The core and the kit (itself the core only).
        .target(name: "SecItemTestSupport", dependencies: ["SecItemCore", "SecItemConformance"], path: "Tests/SecItemTestSupport"),
        // The core's own tests link the core and the memory backend only (no libsecret,
        // no OpenSSL): `swift build --target SecItemCoreTests` builds without them.
        .testTarget(
            name: "SecItemCoreTests",
            dependencies: ["SecItemCore", "SecItemMemory", "SecItemConformance"],
            path: "Tests/SecItemCoreTests"
        ),
        // The umbrella's surface: Apple's API, the process configuration and backend
        // registry, the typed layer.
        .testTarget(
            name: "SecItemTests",
            dependencies: ["SecItem", "SecItemCore", "SecItemMemory", "SecItemKeychain", "SecItemTestSupport", "CSecItemTLSProbe"],
            path: "Tests/SecItemTests"
        ),
        // A TLS client (libssl) for the mutual-TLS test of identities from the keychain (issue 25).
        .target(
            name: "CSecItemTLSProbe", dependencies: ["CSecItemKeys"], path: "Tests/CSecItemTLSProbe",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror"])],
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),
        // The out-of-tree backend of Tests/Fixtures/ThirdPartyBackend (SecItemCore only), compiled
        // here too so that ConformanceTests selects it by name through the registry.
        .target(name: "ThirdPartyArrayBackend", dependencies: ["SecItemCore"], path: "Tests/Fixtures/ThirdPartyBackend/Sources/ArrayBackend"),
        .testTarget(
            name: "ConformanceTests",
            dependencies: [
                "SecItemSealedStore", "SecItemConformance", "SecItemMemory", "SecItemSQLite", "SecItemSecretService", "SecItemPostgreSQL", "SecItem",
                "SecItemKeychain", "ThirdPartyArrayBackend", "SecItemTestSupport", "SecItemTools",
            ],
            path: "Tests/ConformanceTests"
        ),
        .testTarget(
            name: "SQLiteBackendTests",
            dependencies: [
                "SecItemSealedStore", "SecItemSQLite", "SecItem", "SecItemCore", "CSecItemSQLite3", "CSecItemCrypto", "SecItemSQLiteHelper",
                "SecItemTestSupport", "SecItemConformance",
            ],
            path: "Tests/SQLiteBackendTests"
        ),
        // The child process the file backend's crash and multi-process tests run.
        .executableTarget(
            name: "SecItemSQLiteHelper",
            dependencies: [
                "SecItemSealedStore", "SecItemSQLite", "SecItemCore", "SecItemKeychain", "SecItemTestSupport", "SecItemConformance",
                "SecItemSecretService",
            ],
            path: "Tests/SQLiteHelperProcess"
        ),
        .testTarget(
            name: "SecretServiceBackendTests",
            dependencies: ["SecItemSecretService", "SecItem", "SecItemCore", "SecretServiceTestHelper", "SecItemTestSupport", "CSecItemGLibCheck"],
            path: "Tests/SecretServiceBackendTests"
        ),
        // CSecItemGLib's declarations compiled against libsecret's and GLib's real headers
        // (libsecret-1-dev): the build fails on any difference. Only this check sees the headers.
        .systemLibrary(
            name: "CSecItemLibsecretSystem",
            path: "Backends/SecretService/CSecItemLibsecretSystem",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        .target(name: "CSecItemGLibCheck", dependencies: ["CSecItemLibsecretSystem"], path: "Tests/CSecItemGLibCheck", cSettings: cWarnings),
        // A child process for SecretServiceBackendTests (racing adds, broken environments).
        .executableTarget(
            name: "SecretServiceTestHelper",
            dependencies: ["SecItemSecretService", "SecItemCore"],
            path: "Tests/SecretServiceTestHelper"
        ),
        // Against the private server of scripts/with-postgresql (PG* variables).
        .testTarget(
            name: "PostgreSQLBackendTests",
            dependencies: [
                "SecItemSealedStore", "SecItemPostgreSQL", "SecItemSQLite", "SecItemCore", "SecItem", "SecItemTestSupport", "SecItemPostgreSQLHelper",
                "SecItemSecretService",
            ],
            path: "Tests/PostgreSQLBackendTests"
        ),
        // A child process for PostgreSQLBackendTests: one host of a fleet.
        .executableTarget(
            name: "SecItemPostgreSQLHelper",
            dependencies: ["SecItemPostgreSQL", "SecItemCore", "SecItemTestSupport"],
            path: "Tests/PostgreSQLHelperProcess"
        ),
        .testTarget(
            name: "ExampleTests",
            dependencies: ["SecItem", "SecItemTestSupport"],
            path: "Tests/ExampleTests"
        ),
        // Source compatibility (issue 15): keychain code written as for Apple platforms, and a
        // library whose generic names (`Keychain`, `ItemClass`, …) must not clash with SecItem's.
        // Warnings are errors here: the Apple-style code must build with zero of either.
        .target(name: "ClashingNamesLibrary", path: "Tests/ClashingNamesLibrary"),
        .testTarget(
            name: "SourceCompatibilityTests",
            dependencies: ["SecItem", "SecItemMemory", "ClashingNamesLibrary", "LocalAuthentication", "SecItemCore"],
            path: "Tests/SourceCompatibilityTests",
            swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]
        ),
        .testTarget(
            name: "GitCredentialTests",
            dependencies: ["SecItemGitCredential", "SecItem", "SecItemCore", "SecItemMemory", "SecItemTestSupport"],
            path: "Tests/GitCredentialTests",
            exclude: ["Scripts"]
        ),
        .testTarget(
            name: "AccessControlTests",
            dependencies: [
                "SecItemSealedStore", "SecItem", "SecItemCore", "SecItemPolkit", "SecItemTools", "SecItemMemory", "SecItemSQLite", "SecItemSecretService",
                "SecItemTestSupport", "LocalAuthentication",
            ],
            path: "Tests/AccessControlTests"
        ),
        .testTarget(
            name: "CLITests",
            dependencies: ["SecItemSealedStore", "SecItem", "SecItemCore", "SecItemTools", "SecItemMemory", "SecItemSQLite", "CSecItemSQLite3", "SecItemTestSupport", "SecItemConformance", "SecItemAppHelper"],
            path: "Tests/CLITests"
        ),
        // Key sources held by desktop services (issue 23): the login keyring's key item and the
        // Flatpak Secret portal, with gnome-keyring and xdg-desktop-portal, in process and through `secitem`.
        .testTarget(
            name: "DesktopKeySourceTests",
            dependencies: [
                "SecItem", "SecItemCore", "SecItemSQLite", "SecItemSealedStore", "SecItemSecretService", "SecItemTestSupport",
                "SecItemConformance", "SecItemSQLiteHelper",
            ],
            path: "Tests/DesktopKeySourceTests"
        ),
        // A program with default settings, copied under several names by CLITests
        // (per-application access groups across real processes).
        .executableTarget(name: "SecItemAppHelper", dependencies: ["SecItem"], path: "Tests/AppHelperProcess"),
    ]
)

// Manifest-wide strictness (swift-log's approach): Swift 6 language mode is the
// default for tools-version 6; add upcoming features that keep the code honest.
// The source-compatibility targets, and the helper written as an app is (`import SecItem`
// only), are compiled as users compile their code (plain Swift 6 mode), so that what they
// prove holds for an app that turns on none of these.
let userStyleTargets: Set<String> = ["SourceCompatibilityTests", "ClashingNamesLibrary", "SecItemAppHelper"]
for target in package.targets where target.type != .system && !userStyleTargets.contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
