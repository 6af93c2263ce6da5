public import SecItemCore
import Foundation
import SecItemSQLite
import SecItemSealedStore

/// The `secitem export` file (format `secitem-export`, version 1; docs/cli.md).
///
/// Encrypted (the default), it is a keychain file of the file backend protected
/// by the export passphrase — the same scrypt + AES-256-GCM, the same tamper
/// checks (docs/file-format.md) — holding the exported items unchanged plus one
/// manifest item (access group `org.secitem.export`) that records the format,
/// version, item count and access groups, so a file missing items is refused.
/// With `--plaintext` it is a JSON document with the same content in clear.
public enum ExportArchive {
    public static let format = "secitem-export"
    public static let version = 1
    static let manifestGroup = "org.secitem.export"
    static let manifestService = "org.secitem.export.manifest"

    struct Manifest: Codable {
        var format: String
        var version: Int
        var count: Int
        var accessGroups: [String]
        var created: Date
    }

    // MARK: Writing

    /// The scrypt cost of new encrypted archives: N = 2^17, r = 8, p = 1 (128 MiB,
    /// about half a second). An archive travels and can be attacked offline, so it
    /// costs 4× the file backend's default. Stored in the archive: older archives
    /// (N = 2^15) still open.
    static let scryptParameters = ScryptParameters(logN: 17, r: 8, p: 1)

    /// The shortest export passphrase accepted, in characters.
    public static let minimumPassphraseLength = 12

    /// Throws `errSecParam` when `passphrase` is shorter than ``minimumPassphraseLength``
    /// (counted in Unicode scalars, from its bytes).
    public static func checkPassphrase(_ passphrase: Passphrase) throws(SecItemError) {
        let length = passphrase.scalarCount
        guard length >= minimumPassphraseLength else {
            throw SecItemError(
                errSecParam,
                "the export passphrase has \(length) characters; an export archive can be attacked offline, so it needs at least \(minimumPassphraseLength)")
        }
    }

    /// Writes `items` to a new file at `path`, encrypted with `passphrase`, or in
    /// clear JSON when `passphrase` is `nil`. The file appears only when complete,
    /// and never replaces one: it is written in a private (0700) directory beside
    /// `path`, every file in it created 0600 with `O_EXCL` from its first byte, and
    /// hard-linked to `path`, which fails when anything — even a file created a
    /// moment ago by someone else — is there.
    /// - Throws: `errSecParam` when `path` exists or the passphrase is too short;
    ///   `errSecIO` when it cannot be written.
    public static func write(
        _ items: [StoredItem], to path: String, passphrase: Passphrase?, progress: (Int) -> Void = { _ in }
    ) throws(SecItemError) {
        if let passphrase { try checkPassphrase(passphrase) }
        var st = stat()
        guard lstat(path, &st) != 0 else {
            throw SecItemError(errSecParam, "\(path) already exists; remove it or choose another name")
        }
        let parent = (path as NSString).deletingLastPathComponent
        var template = Array(((parent.isEmpty ? "." : parent) + "/.secitem-export-XXXXXX").utf8CString)
        guard let directory = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) })
        else {
            throw SecItemError(errSecIO, "cannot create a private directory beside \(path): \(String(cString: strerror(errno)))")
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let temporary = directory + "/archive"
        let manifest = Manifest(
            format: format, version: version, count: items.count,
            accessGroups: Array(Set(items.map(\.accessGroup))).sorted(), created: Date())
        if let passphrase {
            let backend = try SQLiteBackend(
                configuration: SQLiteBackend.Configuration(
                    path: temporary, keySource: .passphrase(passphrase), scryptParameters: scryptParameters))
            do throws(SecItemError) {
                for (index, item) in items.enumerated() {
                    try backend.add(item)
                    progress(index + 1)
                }
                try backend.add(manifestItem(manifest))
            } catch {
                backend.close()
                throw error
            }
            backend.close()
        } else {
            let document = PlainDocument(manifest: manifest, items: items.map(PlainItem.init))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            guard var data = try? encoder.encode(document) else { throw SecItemError(errSecIO, "cannot encode the export") }
            defer { data.resetBytes(in: 0..<data.count) }
            try writeNew(temporary, data)
            progress(items.count)
        }
        guard link(temporary, path) == 0 else {
            let code = errno
            if code == EEXIST {
                throw SecItemError(errSecParam, "\(path) appeared while the export was written; it was left alone and nothing was exported")
            }
            throw SecItemError(errSecIO, "cannot create \(path): \(String(cString: strerror(code)))")
        }
        let dirFD = open(parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            fsync(dirFD)
            close(dirFD)
        }
    }

    /// Creates `path` (0600, `O_EXCL`: it must not exist) and writes and syncs `data`.
    static func writeNew(_ path: String, _ data: Data) throws(SecItemError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SecItemError(errSecIO, "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let failed = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return true }
                offset += n
            }
            return false
        }
        guard !failed, fsync(fd) == 0 else {
            throw SecItemError(errSecIO, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func manifestItem(_ manifest: Manifest) throws(SecItemError) -> StoredItem {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(manifest) else { throw SecItemError(errSecIO, "cannot encode the manifest") }
        let now = Date()
        return StoredItem(
            itemClass: .genericPassword, id: UUID(),
            attributes: [
                SecConstant.kSecAttrService: .string(manifestService), SecConstant.kSecAttrAccount: .string(""), SecConstant.kSecAttrAccessGroup: .string(manifestGroup),
                SecConstant.kSecAttrSynchronizable: .number(0), SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleWhenUnlocked), SecConstant.kSecAttrCreationDate: .date(now), SecConstant.kSecAttrModificationDate: .date(now),
            ],
            data: data)
    }

    // MARK: Reading

    /// Whether the file at `path` is encrypted (`nil` when it is not an export file).
    public static func isEncrypted(_ path: String) throws(SecItemError) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SecItemError(errSecParam, "cannot read \(path)")
        }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 16)) ?? Data()
        if head == Data("SQLite format 3\0".utf8) { return true }
        if head.first.map({ $0 == UInt8(ascii: "{") }) == true { return false }
        throw SecItemError(errSecDecode, "\(path) is not a secitem export file")
    }

    /// Reads every item of the export file at `path`; nothing is returned unless
    /// the whole file is intact and complete.
    ///
    /// A plaintext (JSON) export is refused unless `allowPlaintext` is true: nothing
    /// authenticates it, so anyone who could write the file chose its items, and a
    /// plaintext file swapped in for an encrypted archive must not pass unnoticed
    /// (`secitem import` passes its `--plaintext` flag here).
    /// - Parameters:
    ///   - allowPlaintext: Accept a plaintext (JSON) export. Default `false`.
    ///   - passphrase: Asked only for an encrypted file.
    /// - Throws: `errSecDecode` for a plaintext file without `allowPlaintext` (the
    ///   file is not read further); `errSecAuthFailed` for a wrong passphrase;
    ///   `errSecDecode` or `errSecInvalidKeychain` for a damaged, truncated or foreign file.
    public static func read(
        from path: String, allowPlaintext: Bool = false, passphrase: () throws(SecItemError) -> Passphrase
    ) throws(SecItemError) -> [StoredItem] {
        if try isEncrypted(path) {
            return try readEncrypted(path, passphrase: try passphrase())
        }
        guard allowPlaintext else {
            throw SecItemError(
                errSecDecode,
                "\(path) is a plaintext (JSON) export, not an encrypted one; anyone who could write it chose its items. "
                    + "Pass allowPlaintext: true (secitem import --plaintext) to read it anyway")
        }
        guard var data = FileManager.default.contents(atPath: path) else { throw SecItemError(errSecIO, "cannot read \(path)") }
        defer { wipeData(&data) }
        let document: PlainDocument
        do {
            document = try JSONDecoder().decode(PlainDocument.self, from: data)
        } catch {
            throw SecItemError(errSecDecode, "\(path) is not a complete secitem export file (JSON: \(error.localizedDescription))")
        }
        try check(document.manifest, path: path)
        let items = try document.items.map { (item) throws(SecItemError) in try item.stored() }
        guard items.count == document.manifest.count else {
            throw SecItemError(errSecDecode, "\(path) holds \(items.count) items but its manifest says \(document.manifest.count)")
        }
        return items
    }

    static func check(_ manifest: Manifest, path: String) throws(SecItemError) {
        guard manifest.format == format else { throw SecItemError(errSecDecode, "\(path) is not a secitem export file") }
        guard manifest.version <= version else {
            throw SecItemError(errSecDecode, "\(path) is export format version \(manifest.version); this secitem reads up to \(version)")
        }
    }

    static func readEncrypted(_ path: String, passphrase: Passphrase) throws(SecItemError) -> [StoredItem] {
        // Work on a private copy: opening a keychain file may write beside it. The copy
        // is 0600 from its first byte in a mkdtemp (0700) directory, whatever the
        // archive's own mode and the umask (SQLite gives its -wal/-shm the same mode).
        let base = FileManager.default.temporaryDirectory.path
        var template = Array((base + "/secitem-import-XXXXXX").utf8CString)
        guard let directory = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) })
        else {
            throw SecItemError(errSecIO, "cannot create a private directory in \(base): \(String(cString: strerror(errno)))")
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/export.db"
        try copyPrivately(path, to: copy)
        do throws(SecItemError) {
            return try readEncryptedCopy(copy, original: path, passphrase: passphrase)
        } catch where error.status == errSecInvalidKeychain || error.status == errSecIO {
            // Name the user's file, not the private copy, and call it what it is.
            throw SecItemError(errSecDecode, "\(path) is damaged or truncated; nothing imported")
        }
    }

    /// Copies `path` to a new file `copy` created 0600 with `O_EXCL | O_NOFOLLOW`.
    static func copyPrivately(_ path: String, to copy: String) throws(SecItemError) {
        let source = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard source >= 0 else { throw SecItemError(errSecIO, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(source) }
        var info = stat()
        guard fstat(source, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw SecItemError(errSecDecode, "\(path) is not a regular file")
        }
        let target = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard target >= 0 else { throw SecItemError(errSecIO, "cannot create \(copy): \(String(cString: strerror(errno)))") }
        defer { close(target) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { Foundation.read(source, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw SecItemError(errSecIO, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { return }
            var offset = 0
            while offset < n {
                let w = buffer.withUnsafeBytes { Foundation.write(target, $0.baseAddress! + offset, n - offset) }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else { throw SecItemError(errSecIO, "cannot copy \(path): \(String(cString: strerror(errno)))") }
                offset += w
            }
        }
    }

    private static func readEncryptedCopy(_ copy: String, original path: String, passphrase: Passphrase) throws(SecItemError)
        -> [StoredItem]
    {
        let backend: SQLiteBackend
        do throws(SecItemError) {
            backend = try SQLiteBackend(configuration: SQLiteBackend.Configuration(path: copy, keySource: .passphrase(passphrase)))
        } catch where error.status == errSecAuthFailed {
            throw SecItemError(errSecAuthFailed, "the export passphrase does not unlock \(path); nothing imported")
        }
        defer { backend.close() }
        let report = try backend.verify()
        guard report.isIntact else {
            throw SecItemError(
                errSecDecode, "\(path) has \(report.problems.count) damaged or altered items; nothing imported")
        }
        let manifestItems = try backend.fetch(
            matching: ItemQuery(
                itemClass: .genericPassword, attributes: [SecConstant.kSecAttrService: .string(manifestService)], accessGroups: [manifestGroup]),
            limit: nil)
        guard manifestItems.count == 1, let data = manifestItems[0].data,
            let manifest = try? JSONDecoder().decode(Manifest.self, from: data)
        else {
            throw SecItemError(errSecDecode, "\(path) has no readable manifest: not a complete secitem export file")
        }
        try check(manifest, path: path)
        var items: [StoredItem] = []
        for itemClass in [ItemClass.genericPassword, .internetPassword, .certificate, .key] {
            items += try backend.fetch(
                matching: ItemQuery(itemClass: itemClass, accessGroups: Set(manifest.accessGroups), synchronizable: .any),
                limit: nil)
        }
        items.removeAll { $0.accessGroup == manifestGroup }
        guard items.count == manifest.count else {
            throw SecItemError(errSecDecode, "\(path) holds \(items.count) items but its manifest says \(manifest.count)")
        }
        return items
    }

    // MARK: The plaintext form

    struct PlainDocument: Codable {
        var manifest: Manifest
        var items: [PlainItem]
    }

    struct PlainItem: Codable {
        var itemClass: String
        var id: UUID
        var attributes: [String: PlainValue]
        var data: Data?

        enum CodingKeys: String, CodingKey {
            case itemClass = "class", id, attributes, data
        }

        init(_ item: StoredItem) {
            itemClass = item.itemClass.rawValue
            id = item.id
            attributes = item.attributes.mapValues(PlainValue.init)
            data = item.data
        }

        func stored() throws(SecItemError) -> StoredItem {
            guard let cls = ItemClass(rawValue: itemClass) else {
                throw SecItemError(errSecDecode, "an item has the unknown class '\(itemClass)'")
            }
            return StoredItem(itemClass: cls, id: id, attributes: attributes.mapValues(\.value), data: data)
        }
    }

    /// One attribute value, its kind explicit: `{"string": …}`, `{"data": base64}`,
    /// `{"number": n}` or `{"date": seconds since 2001-01-01}`.
    struct PlainValue: Codable {
        var value: AttributeValue

        init(_ value: AttributeValue) { self.value = value }

        enum CodingKeys: String, CodingKey { case string, data, number, date }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            if let s = try c.decodeIfPresent(String.self, forKey: .string) {
                value = .string(s)
            } else if let d = try c.decodeIfPresent(Data.self, forKey: .data) {
                value = .data(d)
            } else if let n = try c.decodeIfPresent(Int64.self, forKey: .number) {
                value = .number(n)
            } else {
                value = .date(Date(timeIntervalSinceReferenceDate: try c.decode(Double.self, forKey: .date)))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            switch value {
            case .string(let s): try c.encode(s, forKey: .string)
            case .data(let d): try c.encode(d, forKey: .data)
            case .number(let n): try c.encode(n, forKey: .number)
            case .date(let d): try c.encode(d.timeIntervalSinceReferenceDate, forKey: .date)
            }
        }
    }
}
