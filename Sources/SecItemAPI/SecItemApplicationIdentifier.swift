public import SecItemSecurity
import SecItemModel
public import Foundation
import Synchronization

/// The application identifier of a process: the Linux counterpart of an Apple app's
/// team prefix + bundle id, and its default access group.
///
/// With no access groups configured, a process is entitled to exactly one group,
/// its application identifier, so unrelated programs sharing one store never see or
/// delete each other's items (the iOS "sign out: delete every item of every class"
/// idiom deletes only the caller's own). Reverse-DNS names (`com.example.app`) are
/// the recommended form.
///
/// Resolved once per process, first match wins:
///
/// | order | source | ``Source`` |
/// |---|---|---|
/// | 1 | code: `SecItemSystem.bootstrap(applicationIdentifier:)` | `.code` |
/// | 2 | `SECITEM_APPLICATION_ID` | `.environment` |
/// | 3 | `application-id` in the config file | `.configFile` |
/// | 4 | `Bundle.main.bundleIdentifier`, when the program has an `Info.plist` | `.bundle` |
/// | 5 | `FLATPAK_ID`, set inside a Flatpak sandbox | `.flatpak` |
/// | 6 | `executable.<name>`, `<name>` the executable's file name | `.executable` |
///
/// The last is stable across runs and rebuilds (it ignores the directory, so
/// `.build/debug/tool` and `/usr/local/bin/tool` are the same application) but two
/// unrelated programs with the same file name share it; debug builds print a
/// one-time warning recommending an explicit identifier, release builds never do.
public struct SecItemApplicationIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// Where an identifier came from.
    public enum Source: String, Sendable, Hashable {
        case code
        case environment
        case configFile = "config file"
        case bundle
        case flatpak
        case executable
    }

    /// The identifier, which is also the process's default access group.
    public let value: String
    /// Where it came from.
    public let source: Source

    public init(_ value: String, source: Source) {
        self.value = value
        self.source = source
    }

    public var description: String { "\(value) (from \(sourceDescription))" }

    /// The source in words, naming the setting (`SECITEM_APPLICATION_ID`, …).
    public var sourceDescription: String {
        switch source {
        case .code: return "code"
        case .environment: return "SECITEM_APPLICATION_ID"
        case .configFile: return "application-id in the config file"
        case .bundle: return "the CFBundleIdentifier of the program's Info.plist"
        case .flatpak: return "FLATPAK_ID"
        case .executable: return "the executable's name; set an explicit identifier"
        }
    }

    /// The prefix of an identifier derived from the executable's name.
    public static let executablePrefix = "executable."

    /// Why `value` cannot be an application identifier, or `nil` when it can:
    /// non-empty, at most 255 bytes, no control characters, no comma (groups are
    /// listed comma-separated), no leading or trailing space.
    public static func problem(with value: String) -> String? {
        if value.isEmpty { return "an application identifier cannot be empty" }
        if value.utf8.count > 255 { return "an application identifier is at most 255 bytes" }
        if value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "an application identifier cannot hold control characters"
        }
        if value.contains(",") { return "an application identifier cannot hold a comma" }
        if value.trimmingCharacters(in: .whitespaces) != value {
            return "an application identifier cannot start or end with a space"
        }
        return nil
    }

    /// The identifier the inputs give, first match wins (see the table above).
    /// - Parameters:
    ///   - code: The identifier given in code, if any.
    ///   - environment: Read for `SECITEM_APPLICATION_ID` and `FLATPAK_ID`.
    ///   - configFile: The config file's `application-id`, if any.
    ///   - bundleIdentifier: `Bundle.main.bundleIdentifier` (evaluated only when needed).
    ///   - executablePath: The running executable (evaluated only when needed).
    ///   - fallback: When given, used (as `.code`) instead of the bundle, `FLATPAK_ID`
    ///     and executable steps: a tool's own name, below what the user configured.
    /// - Throws: `errSecParam` when an identifier given explicitly (code,
    ///   `SECITEM_APPLICATION_ID`, the config file) fails ``problem(with:)``, naming
    ///   where it came from. A bundle identifier or `FLATPAK_ID` that fails it is
    ///   skipped. An empty value counts as not given.
    public static func resolve(
        code: String? = nil, environment: [String: String], configFile: String? = nil,
        bundleIdentifier: @autoclosure () -> String?, executablePath: @autoclosure () -> String?,
        fallback: String? = nil
    ) throws(SecItemError) -> SecItemApplicationIdentifier {
        let explicit: [(String?, Source)] = [
            (code, .code), (environment["SECITEM_APPLICATION_ID"], .environment), (configFile, .configFile),
        ]
        for case (let value?, let source) in explicit where !value.isEmpty {
            if let problem = problem(with: value) {
                throw SecItemError(errSecParam, "\(problem) (\(SecItemApplicationIdentifier(value, source: source).sourceDescription))")
            }
            return SecItemApplicationIdentifier(value, source: source)
        }
        if let fallback { return SecItemApplicationIdentifier(fallback, source: .code) }
        // Lazily: reading the bundle touches the file system, and is rarely needed.
        if let value = bundleIdentifier(), !value.isEmpty, problem(with: value) == nil {
            return SecItemApplicationIdentifier(value, source: .bundle)
        }
        if let value = environment["FLATPAK_ID"], !value.isEmpty, problem(with: value) == nil {
            return SecItemApplicationIdentifier(value, source: .flatpak)
        }
        return SecItemApplicationIdentifier(derived(fromExecutable: executablePath()), source: .executable)
    }

    /// `executable.<name>`: the executable's file name, bytes other than ASCII
    /// letters, digits, `.`, `-` and `_` replaced by `_`.
    public static func derived(fromExecutable path: String?) -> String {
        let name = (path ?? "").split(separator: "/").last.map(String.init) ?? ""
        let cleaned = String(
            String.UnicodeScalarView(
                name.unicodeScalars.prefix(200).map { scalar in
                    scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
                        ? scalar : "_"
                }))
        return executablePrefix + (cleaned.isEmpty ? "unknown" : cleaned)
    }

    /// The identifier of this process from everything but the config file (which
    /// the `SecItem` module reads): `SECITEM_APPLICATION_ID`, the bundle, `FLATPAK_ID`,
    /// the executable. `configFile` is passed through to `resolve(code:environment:configFile:bundleIdentifier:executablePath:)`.
    ///
    /// When the result is derived from the executable, debug builds print a
    /// one-time warning on stderr; release builds never do.
    /// - Throws: what `resolve(code:environment:configFile:bundleIdentifier:executablePath:)` throws.
    public static func process(
        code: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment, configFile: String? = nil
    ) throws(SecItemError) -> SecItemApplicationIdentifier {
        let id = try resolve(
            code: code, environment: environment, configFile: configFile, bundleIdentifier: mainBundleIdentifier,
            executablePath: executablePath)
        if id.source == .executable { warnOnce(id) }
        return id
    }

    /// The main bundle's identifier, read once (Foundation reads the Info.plist).
    private static let mainBundleIdentifier: String? = Bundle.main.bundleIdentifier

    /// The running executable: `/proc/self/exe`, else `argv[0]`.
    private static let executablePath: String? = {
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            // A replaced binary reads as "/path (deleted)".
            return target.hasSuffix(" (deleted)") ? String(target.dropLast(" (deleted)".count)) : target
        }
        return CommandLine.arguments.first
    }()

    private static let warned = Mutex(false)

    private static func warnOnce(_ id: SecItemApplicationIdentifier) {
        #if DEBUG
        let first = warned.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let message = """
            SecItem: warning: no application identifier is set, so this program's keychain items go to the \
            access group '\(id.value)', derived from the executable's name. Set one (reverse-DNS, such as \
            com.example.app): SecItemSystem.bootstrap(applicationIdentifier:), SECITEM_APPLICATION_ID, or \
            application-id in the config file. (Debug builds only.)

            """
        FileHandle.standardError.write(Data(message.utf8))
        #endif
    }
}
