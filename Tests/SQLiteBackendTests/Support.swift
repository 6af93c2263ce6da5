import CSecItemSQLite3
import Foundation
import SecItem
import SecItemCore
import SecItemSQLite
import SecItemTestSupport
import SecItemSealedStore

/// A private temporary directory, removed when the value is freed.
final class TempDir {
    let path: String

    init() {
        var template = Array("/tmp/secitem-sqlite-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = String(cString: made!)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

/// A fresh random 32-byte key file, mode 0600.
func makeKeyFile(_ path: String) throws -> String {
    let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
    _ = FileManager.default.createFile(atPath: path, contents: key, attributes: [.posixPermissions: 0o600])
    return path
}

let groups = AccessGroups(["test"])

func openBackend(_ path: String, _ source: SQLiteBackend.KeySource) throws -> SQLiteBackend {
    try SQLiteBackend(
        configuration: .init(
            path: path, keySource: source, generatedKeyFilePath: (path as NSString).deletingLastPathComponent + "/gen.key",
            scryptParameters: ScryptParameters(logN: 12, r: 8, p: 1)))
}

func genp(_ account: String, service: String = "svc", data: String? = nil) -> [String: Any] {
    Query.genericPassword(service, account, data.map { [kSecValueData as String: Data($0.utf8)] } ?? [:])
}

/// The data of the one item with this account, through the full SecItem path.
func readData(_ client: SecItemClient, _ account: String, service: String = "svc") throws(SecItemError) -> String? {
    var q = genp(account, service: service)
    q["r_Data"] = true
    let data = try client.copyMatchingItems(q) as? Data
    return data.flatMap { String(bytes: $0, encoding: .utf8) }
}

func status(_ body: () throws -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch let error as SecItemError {
        return error.status
    } catch {
        return -1
    }
}

/// A raw SQLite connection for poking at the file as an attacker or a checker would.
final class RawDB {
    let db: OpaquePointer

    init(_ path: String) {
        var handle: OpaquePointer?
        sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        db = handle!
        sqlite3_busy_timeout(db, 10_000)
    }

    deinit { sqlite3_close_v2(db) }

    func exec(_ sql: String) {
        sqlite3_exec(db, sql, nil, nil, nil)
    }

    /// Every value of the first column of `sql`'s rows, as text.
    func strings(_ sql: String) -> [String] {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else {
            return ["error: " + String(cString: sqlite3_errmsg(db))]
        }
        defer { sqlite3_finalize(stmt) }
        var out: [String] = []
        while sqlite3_step(stmt) == SQLITE_ROW {
            out.append(sqlite3_column_text(stmt, 0).map { String(cString: $0) } ?? "NULL")
        }
        return out
    }

    func blob(_ sql: String) -> [UInt8]? {
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &stmt, nil) == SQLITE_OK else { return nil }
        defer { sqlite3_finalize(stmt) }
        guard sqlite3_step(stmt) == SQLITE_ROW else { return nil }
        if sqlite3_column_type(stmt, 0) == SQLITE_TEXT {
            return sqlite3_column_text(stmt, 0).map { Array(String(cString: $0).utf8) }
        }
        let n = Int(sqlite3_column_bytes(stmt, 0))
        guard let p = sqlite3_column_blob(stmt, 0) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }

    /// Sets a column of one row to given bytes (as a blob, or text for `class`).
    func set(_ column: String, row: Int64, _ bytes: [UInt8]) {
        var stmt: OpaquePointer?
        sqlite3_prepare_v2(db, "UPDATE sealed_items SET \(column) = ? WHERE seq = \(row)", -1, &stmt, nil)
        defer { sqlite3_finalize(stmt) }
        bytes.withUnsafeBytes { raw in
            if column == "class" {
                _ = sqlite3_bind_text(stmt, 1, raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count),
                                      csecitem_sqlite_transient())
            } else {
                _ = sqlite3_bind_blob(stmt, 1, raw.baseAddress, Int32(raw.count), csecitem_sqlite_transient())
            }
        }
        sqlite3_step(stmt)
    }
}

/// The helper executable, built next to the test bundle (or `SECITEM_SQLITE_HELPER`).
func helperPath() throws -> String {
    if let explicit = ProcessInfo.processInfo.environment["SECITEM_SQLITE_HELPER"] { return explicit }
    return try Executables.built("SecItemSQLiteHelper")
}

/// A running helper process (the shared runner) with the key file in its environment.
final class Child {
    private let child: ChildProcess
    var process: Process { child.process }

    init(_ arguments: [String], keyFile: String, environment: [String: String] = [:]) throws {
        var env = ProcessInfo.processInfo.environment
        env["SECITEM_KEY_FILE"] = keyFile
        for (name, value) in environment { env[name] = value }
        child = try ChildProcess(try helperPath(), arguments, environment: env, inheritStderr: true)
    }

    /// The complete lines printed so far.
    var lines: [String] { child.lines }

    func kill() { child.signal(SIGKILL) }

    /// Waits for exit; returns complete lines.
    func finish() throws -> [String] {
        _ = try child.finish(timeout: .seconds(600))
        return child.lines
    }
}

/// Runs the helper to completion.
func runHelper(_ arguments: [String], keyFile: String, environment: [String: String] = [:]) throws
    -> (lines: [String], status: Int32)
{
    let child = try Child(arguments, keyFile: keyFile, environment: environment)
    let lines = try child.finish()
    return (lines, child.process.terminationStatus)
}

func fileBytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

/// Items a, b, c (rows 1, 2, 3) under service "svc"; closed and checkpointed (the tamper tests' store).
func makeKeychain(_ dir: TempDir, key: String, name: String) throws -> String {
    let db = dir.file(name)
    let backend = try openBackend(db, .keyFile(key))
    let client = SecItemClient(backend: backend, accessGroups: groups)
    for account in ["a", "b", "c"] { try client.addItem(genp(account, data: "data-\(account)")) }
    backend.close()
    return db
}
