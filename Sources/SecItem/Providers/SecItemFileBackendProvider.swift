public import SecItemCore
import SecItemSQLite
import SecItemSealedStore
import Foundation

/// The encrypted file backend's provider: the automatic choice's fallback.
public struct SecItemFileBackendProvider: SecItemBackendProvider {
    public init() { SecItemBackendRegistry.registerKeySources() }

    public var kind: BackendKind { .file }
    public var automaticRank: Int? { 100 }
    public var displayName: String { "the encrypted file" }
    public var settings: [SecItemSettingDeclaration] { SQLiteBackend.Settings.all }
    public var environmentVariables: [String] {
        ["XDG_DATA_HOME", "CREDENTIALS_DIRECTORY", "SECITEM_FLATPAK_INFO", "FLATPAK_ID", "XDG_STATE_HOME"]
    }

    public func open(_ configuration: SecItemConfiguration) throws(SecItemError) -> any SecItemBackend {
        try configuration.checkUsable()
        return try SQLiteBackend(configuration: SQLiteBackend.Configuration(configuration))
    }

    /// The file backend is the fallback: it is usable whenever it is configurable,
    /// so the probe opens nothing.
    public func probe(_ configuration: SecItemConfiguration) -> BackendAvailability {
        do throws(SecItemError) {
            try configuration.checkUsable()
            _ = try SQLiteBackend.Configuration(configuration)
            return BackendAvailability(usable: true, summary: "configurable")
        } catch {
            return BackendAvailability(usable: false, summary: "not configurable: \(error)")
        }
    }

    /// Where the file and key are, whether the key file is private, and, when the
    /// file exists, whether it opens and unlocks. Creates nothing.
    public func diagnose(_ configuration: SecItemConfiguration) -> BackendAvailability {
        let file: SQLiteBackend.Configuration
        do throws(SecItemError) {
            try configuration.checkUsable()
            file = try SQLiteBackend.Configuration(configuration)
        } catch {
            return BackendAvailability(usable: false, summary: "not configurable: \(error)", notes: ["not configurable: \(error)"])
        }
        var notes = ["file: \(file.path)"]
        var usable = true
        let exists = FileManager.default.fileExists(atPath: file.path)
        if !exists {
            let directory = (file.path as NSString).deletingLastPathComponent
            notes.append("the file does not exist yet; it is created (0600, in a 0700 directory) on first use under \(directory)")
        }
        let key = file.keySource.source.diagnosis(configuration, file.keyContext)
        notes.append(key.note)
        notes += file.keySource.diagnosisLines(keyCacheTimeout: file.keyCacheTimeout)
        let keyFile = key.keyFile
        if let keyFile, let problem = PrivateFile.permissionProblem(keyFile) {
            notes.append("key file refused: \(problem)")
            usable = false
        }
        if usable && exists {
            do throws(SecItemError) {
                let backend = try SQLiteBackend(configuration: file)
                backend.close()
                notes.append("opened and unlocked")
            } catch {
                notes.append("cannot be opened: \(error)")
                usable = false
            }
        }
        return BackendAvailability(usable: usable, summary: usable ? "usable" : "not usable", notes: notes)
    }
}
