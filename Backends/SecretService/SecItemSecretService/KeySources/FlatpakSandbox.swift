import Foundation

/// Whether this process runs inside a Flatpak sandbox, and as which application:
/// `/.flatpak-info` (Flatpak writes it into every sandbox; `SECITEM_FLATPAK_INFO`
/// names another file, for tests) or `FLATPAK_ID`.
struct FlatpakSandbox: Sendable, Equatable {
    /// The application id (`[Application] name=` of the info file, else `FLATPAK_ID`), if known.
    var applicationID: String?
    /// How the sandbox was recognised: the info file's path, or `FLATPAK_ID`.
    var evidence: String

    /// The variable that points the detection at another info file.
    static let infoVariable = "SECITEM_FLATPAK_INFO"

    /// The sandbox `environment` describes, or `nil` outside one.
    static func detect(_ environment: [String: String]) -> FlatpakSandbox? {
        let path = environment[infoVariable].flatMap { $0.isEmpty ? nil : $0 } ?? "/.flatpak-info"
        let flatpakID = environment["FLATPAK_ID"].flatMap { $0.isEmpty ? nil : $0 }
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            return FlatpakSandbox(applicationID: applicationName(text) ?? flatpakID, evidence: path)
        }
        if FileManager.default.fileExists(atPath: path) {
            return FlatpakSandbox(applicationID: flatpakID, evidence: path)
        }
        return flatpakID.map { FlatpakSandbox(applicationID: $0, evidence: "FLATPAK_ID") }
    }

    /// `name=` in the `[Application]` group of a `.flatpak-info` key file.
    private static func applicationName(_ text: String) -> String? {
        var inApplication = false
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("[") {
                inApplication = trimmed == "[Application]"
            } else if inApplication, trimmed.hasPrefix("name=") {
                let name = trimmed.dropFirst(5).trimmingCharacters(in: .whitespaces)
                return name.isEmpty ? nil : name
            }
        }
        return nil
    }

    var description: String { "Flatpak sandbox of \(applicationID ?? "an unnamed application") (\(evidence))" }
}
