import Foundation
import SecItemCore
import SecItemGitCredential
import SecItemKeychain
import SecItemMemory
import SecItemSQLite
import SecItemTools

/// A client over a fresh memory backend.
func memoryClient(_ groups: [String]) -> (MemoryBackend, SecItemClient) {
    let backend = MemoryBackend()
    return (backend, SecItemClient(backend: backend, accessGroups: AccessGroups(groups), accessAuthority: HeadlessAccessAuthority()))
}

/// Every item of `backend` in `groups`.
func allItems(_ backend: MemoryBackend, groups: [String]) -> Set<StoredItem> {
    var items = Set<StoredItem>()
    for itemClass in ItemClass.allCases {
        let query = ItemQuery(itemClass: itemClass, accessGroups: Set(groups), synchronizable: .any)
        guard let found = try? backend.fetch(matching: query, limit: nil) else { FuzzCheck.fail("the memory backend failed a fetch") }
        items.formUnion(found)
    }
    return items
}

// MARK: export-archive

/// `ExportArchive.read`: the bytes as an export file (an encrypted keychain file or
/// plaintext JSON), opened with the passphrase of the encrypted seed.
///
/// Invariants: no crash; reading never changes the file it reads.
enum ExportArchiveTarget {
    static let target = FuzzTarget(
        name: "export-archive", summary: "export files (encrypted keychain or JSON) through ExportArchive.read", run: run, seeds: seeds)

    static let passphrase = "fuzzing passphrase 1"

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        withTemporaryDirectory { directory in
            let path = directory + "/archive"
            writeFile(path, bytes)
            _ = try? ExportArchive.read(from: path) { Passphrase(passphrase) }
            let after = FileManager.default.contents(atPath: path) ?? Data()
            FuzzCheck.expect(after.elementsEqual(bytes), "reading an export file changed it")
        }
    }

    static func items() -> [StoredItem] {
        let date = Date(timeIntervalSinceReferenceDate: 800_000_000)
        return [
            StoredItem(
                itemClass: .genericPassword, id: UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!,
                attributes: [
                    SecConstant.kSecAttrService: .string("svc"), SecConstant.kSecAttrAccount: .string("acct"),
                    SecConstant.kSecAttrAccessGroup: .string("app"), SecConstant.kSecAttrSynchronizable: .number(0),
                    SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleWhenUnlocked),
                    SecConstant.kSecAttrCreationDate: .date(date), SecConstant.kSecAttrModificationDate: .date(date),
                ],
                data: Data("secret".utf8)),
            StoredItem(
                itemClass: .internetPassword, id: UUID(uuidString: "10112233-4455-6677-8899-AABBCCDDEEFF")!,
                attributes: [
                    SecConstant.kSecAttrServer: .string("example.com"), SecConstant.kSecAttrAccount: .string("me"),
                    SecConstant.kSecAttrPort: .number(443), SecConstant.kSecAttrAccessGroup: .string("app"),
                    SecConstant.kSecAttrSynchronizable: .number(0), SecConstant.kSecAttrGeneric: .data(Data([0, 255])),
                    SecConstant.kSecAttrCreationDate: .date(date), SecConstant.kSecAttrModificationDate: .date(date),
                ],
                data: Data("pw".utf8)),
        ]
    }

    static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        try withTemporaryDirectory { directory in
            let items = items()
            try ExportArchive.write(items, to: directory + "/plain.json", passphrase: nil)
            // The encrypted form as `ExportArchive.write` makes it, with a cheap scrypt
            // cost (the file records it) so that each run of a mutant stays fast.
            let path = directory + "/encrypted"
            let backend = try SQLiteBackend(
                configuration: SQLiteBackend.Configuration(
                    path: path, keySource: .passphrase(Passphrase(passphrase)),
                    scryptParameters: ScryptParameters(logN: 10, r: 8, p: 1)))
            for item in items { try backend.add(item) }
            let manifest = """
                {"accessGroups":["app"],"count":\(items.count),"created":800000000,"format":"secitem-export","version":1}
                """
            let date = Date(timeIntervalSinceReferenceDate: 800_000_000)
            try backend.add(
                StoredItem(
                    itemClass: .genericPassword, id: UUID(uuidString: "20112233-4455-6677-8899-AABBCCDDEEFF")!,
                    attributes: [
                        SecConstant.kSecAttrService: .string("org.secitem.export.manifest"), SecConstant.kSecAttrAccount: .string(""),
                        SecConstant.kSecAttrAccessGroup: .string("org.secitem.export"), SecConstant.kSecAttrSynchronizable: .number(0),
                        SecConstant.kSecAttrAccessible: .string(SecConstant.kSecAttrAccessibleWhenUnlocked),
                        SecConstant.kSecAttrCreationDate: .date(date), SecConstant.kSecAttrModificationDate: .date(date),
                    ],
                    data: Data(manifest.utf8)))
            backend.close()
            // The encrypted seed must read back, or the fuzzer starts from nothing useful.
            guard (try? ExportArchive.read(from: path) { Passphrase(passphrase) })?.count == items.count else {
                FuzzCheck.fail("the encrypted export seed does not read back")
            }
            return [
                ("plain.json", [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/plain.json")))),
                ("encrypted.db", [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))),
            ]
        }
    }
}

// MARK: git-credential

/// `GitCredential.parse` (git's credential protocol on standard input), then the
/// helper's `store`, `get` and `erase` on a memory backend, and
/// `GitCredentialStore.decodeData` (an item's data, which others may have written).
///
/// Invariants: no crash; the answer a credential encodes parses back to it; a
/// credential stored without expiry is found again with its password; the stored
/// data decodes back to what was stored.
enum GitCredentialTarget {
    static let target = FuzzTarget(
        name: "git-credential", summary: "git credential protocol input through GitCredential.parse and the helper's actions",
        run: run, seeds: seeds)

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        if let stored = GitCredentialStore.decodeData(Data(bytes)) {
            let again = GitCredentialStore.decodeData(GitCredentialStore.encodeData(stored))
            FuzzCheck.expect(again == stored, "stored credential data changed in a round trip")
        }
        guard let credential = try? GitCredential.parse(bytes) else { return }
        if let answer = try? credential.encodeAnswer() {
            let endsInCR = [credential.password, credential.oauthRefreshToken].contains { $0?.last == 0x0D }
            guard let parsed = try? GitCredential.parse(answer) else { FuzzCheck.fail("an encoded answer does not parse") }
            // A value ending in CR loses it, as in git's own reader (CRLF line ends).
            if !endsInCR {
                FuzzCheck.expect(
                    parsed.username == credential.username && parsed.password == credential.password
                        && parsed.passwordExpiryUTC == credential.passwordExpiryUTC
                        && parsed.oauthRefreshToken == credential.oauthRefreshToken,
                    "an answer changed in a round trip")
            }
        }
        let (_, client) = memoryClient(["git.fuzz"])
        let helper = GitCredentialStore(client: client, now: { Date(timeIntervalSince1970: 1_800_000_000) })
        let outcome = try? helper.store(credential)
        if outcome == .added || outcome == .replaced, credential.passwordExpiryUTC == nil {
            var query = credential
            query.password = nil
            guard let found = try? helper.get(query) else { FuzzCheck.fail("a stored credential is not found") }
            FuzzCheck.expect(found.password == credential.password, "a stored credential came back with another password")
        }
        _ = try? helper.get(credential)
        _ = try? helper.erase(credential)
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        [
            ("store", Array("protocol=https\nhost=example.com\nusername=me\npassword=secret\n\n".utf8)),
            ("get-port-path", Array("protocol=https\nhost=example.com:8443\npath=org/repo.git\nusername=me\n\n".utf8)),
            ("expiry-token", Array("protocol=https\nhost=git.example\nusername=u\npassword=p\npassword_expiry_utc=1900000000\noauth_refresh_token=tok\ncapability[]=authtype\nstate[]=x=1\n\n".utf8)),
            ("crlf-url", Array("url=https://me@example.com/x.git\r\n\r\n".utf8)),
            ("stored-data", Array("secret\npassword_expiry_utc=1900000000\noauth_refresh_token=abc".utf8)),
        ]
    }
}

// MARK: config-file

/// `$XDG_CONFIG_HOME/secitem/config`: the bytes as the file, read by
/// `SecItemConfiguration.resolve` (the way every program reads it), then every
/// resolved setting asked for.
///
/// Invariants: no crash; resolving never throws (a bad file is a `problem`).
enum ConfigFileTarget {
    static let target = FuzzTarget(
        name: "config-file", summary: "config files through SecItemConfigFile.parse and SecItemConfiguration.resolve", run: run,
        seeds: seeds)

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = try? SecItemConfigFile.parse(String(decoding: bytes, as: UTF8.self), path: "config")
        withTemporaryDirectory { directory in
            mkdir(directory + "/secitem", 0o700)
            writeFile(directory + "/secitem/config", bytes)
            let configuration = SecItemConfiguration.resolve(environment: ["XDG_CONFIG_HOME": directory, "HOME": directory])
            _ = configuration.backend
            _ = configuration.file
            _ = configuration.keyFile
            _ = configuration.passphraseFile
            _ = configuration.keySource
            _ = configuration.collection
            _ = configuration.accessGroups
            _ = configuration.applicationIdentifier
            _ = try? configuration.resolvedApplicationIdentifier()
            _ = try? configuration.checkApplicationIdentifier()
            _ = try? configuration.accessGroups(toolIdentifier: "fuzz")
            _ = try? configuration.operatorAccessGroups(toolIdentifier: "fuzz")
        }
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        [
            ("file-backend", Array("# secitem\nbackend = file\nfile = /tmp/k.db\nkey-file = \"/tmp/k.key\"\n".utf8)),
            ("groups", Array("application-id = org.example.app\naccess-groups = org.example.app,shared\n".utf8)),
            ("secret-service", Array("backend = secret-service\ncollection = login\nkey-source = automatic\npassphrase-file = /p\n".utf8)),
            ("postgresql", Array("backend = postgresql\npostgresql-url = postgresql:///db\npostgresql-schema = s\n".utf8)),
        ]
    }
}

// MARK: legacy-file

/// `Keychain.migrateLegacyFile`: the bytes as a legacy plaintext secrets file (JSON
/// object of objects, JSON array of entries, or INI), migrated into a memory backend.
///
/// Invariants: no crash; a migration that fails leaves the store as it was; the file
/// is never changed (it is not asked to be removed).
enum LegacyFileTarget {
    static let target = FuzzTarget(
        name: "legacy-file", summary: "legacy plaintext secret files through Keychain.migrateLegacyFile", run: run, seeds: seeds)

    static let groups = ["legacy.fuzz"]

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        withTemporaryDirectory { directory in
            let path = directory + "/secrets"
            writeFile(path, bytes)
            let (backend, client) = memoryClient(groups)
            do {
                try Keychain.migrateLegacyFile(at: URL(fileURLWithPath: path), into: client)
            } catch {
                FuzzCheck.expect(allItems(backend, groups: groups).isEmpty, "a failed migration left items behind")
            }
            let after = FileManager.default.contents(atPath: path) ?? Data()
            FuzzCheck.expect(after.elementsEqual(bytes), "migration changed the legacy file")
        }
    }

    static func seeds() -> [(name: String, bytes: [UInt8])] {
        [
            ("object.json", Array(#"{"api.example.com": {"alice": "s3cret", "bob": "hunter2"}, "mail": {"me": "pw"}}"#.utf8)),
            ("array.json", Array(#"[{"service": "svc", "account": "a", "secret": "x"}, {"service": "svc", "account": "b", "password": "y"}]"#.utf8)),
            ("sections.ini", Array("# legacy\n[api.example.com]\nalice = s3cret\n; comment\n[mail]\nme = pw = with equals\n".utf8)),
        ]
    }
}
