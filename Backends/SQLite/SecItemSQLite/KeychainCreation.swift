import Glibc
import SecItemCore
import SecItemSealedStore

/// Creating a keychain file atomically: built complete under a temporary name,
/// then hard-linked into place, so no process ever sees a half-made keychain and
/// an existing non-keychain file is never overwritten.
enum KeychainCreation {
    /// Creates the file unless it exists. - Returns: whether this call created it.
    static func createIfMissing(_ configuration: SQLiteBackend.Configuration) throws(SecItemError) -> Bool {
        let path = configuration.path
        if FileSystem.exists(path) { return false }
        let (header, kek, keys) = try KeychainHeader.forNewStore(
            configuration.keySource, configuration.keyContext, format: KeychainHeader.fileFormatVersion)
        // Until the file is linked into place, what the source stored for the key (a
        // keyring item) is removed on any way out: a failed creation leaves nothing.
        var linked = false
        defer { if !linked { KeyEncryptionKey.discard(kek, configuration.keySource, configuration.keyContext) } }

        try FileSystem.makePrivateParentDirectories(of: path)
        let temp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileSystem.posixError("cannot create \(temp)") }
        close(fd)
        defer {
            unlink(temp)
            unlink(temp + "-wal")
            unlink(temp + "-shm")
        }
        do {
            let db = try Database(path: temp)
            defer { db.close() }
            let wal = try db.statement("PRAGMA journal_mode=WAL")
            _ = try wal.step(during: "enabling WAL")
            let mode = wal.text(0)
            wal.reset()
            guard mode == "wal" else { throw SecItemError(errSecIO, "cannot enable WAL on \(temp)") }
            try db.execute("PRAGMA synchronous=FULL")
            try db.execute("PRAGMA application_id=1397048649")  // 'SECI'
            try db.transaction(write: true) { () throws(SecItemError) in
                try db.execute(KeychainSchema.format2)
                try db.writeHeaderValues(header.metaValues)
                try db.writeStateRow(try RowSetCommitment(generation: 1).sealed(keys.mac))
            }
        }
        let fileFD = open(temp, O_RDONLY | O_CLOEXEC)
        if fileFD >= 0 {
            fsync(fileFD)
            close(fileFD)
        }
        linked = try linkIntoPlace(temp, path)
        return linked
    }

    /// Links the finished file into place, first removing a `-wal` and `-shm` left
    /// without their keychain (someone deleted only `keychain.db`, after a crash left
    /// its WAL): SQLite would replay that old WAL into the new file and break it. All
    /// under an exclusive `flock` of the directory, which every creator takes: nobody
    /// can link a keychain (and start its WAL) between the check and the removal.
    static func linkIntoPlace(_ temp: String, _ path: String) throws(SecItemError) -> Bool {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            while flock(fd, LOCK_EX) != 0 && errno == EINTR {}
        }
        defer {
            if fd >= 0 {
                flock(fd, LOCK_UN)
                close(fd)
            }
        }
        if !FileSystem.exists(path) {
            unlink(path + "-wal")
            unlink(path + "-shm")
        }
        return try FileSystem.linkIntoPlace(temp, path)
    }
}
