public import Foundation
public import SecItemCore
import Glibc

/// The default ``RollbackWitness``: one small file per store in the user's state
/// directory, `$XDG_STATE_HOME/secitem/high-water/` (`~/.local/state/…`).
///
/// The directory is 0700 and the files 0600, owned by the user (a directory others
/// can write is refused). Each store's mark is `<name>.mark`, where the name is a
/// digest of the store's identity; the file also spells the identity out, with the
/// generation, the digest, the store's id and when it was recorded. A change takes
/// `<name>.lock` (`flock`), reads the mark, and replaces it (a new file written and
/// renamed over the old one), so concurrent processes merge to the maximum and a
/// crash leaves either mark.
///
/// The mark is not `fsync`ed: it is recorded only after the store's own commit is
/// durable (`synchronous=FULL`; PostgreSQL's `COMMIT`), so a power loss can leave it
/// behind the store (which the rules allow) but never ahead of it. An empty mark file
/// (what a lost, never-flushed replacement can leave on some file systems) counts as no
/// mark, as a deleted one does. Two `fsync`s per recorded state made every write of
/// the file backend 1.7× slower and a lookup right after another process's commit
/// 27× slower (debug build, measured with the benchmark group `rollback`). An operator's
/// ``reset(_:to:note:)`` also appends one line to `accepted.log` there.
public struct StateDirectoryWitness: RollbackWitness, CustomStringConvertible {
    /// The directory the marks are in.
    public let directory: String

    /// - Parameter directory: Where the marks are kept; created 0700 on first use.
    public init(directory: String) {
        self.directory = directory
    }

    /// `$XDG_STATE_HOME/secitem/high-water`, or `~/.local/state/secitem/high-water`;
    /// `nil` when neither a state directory nor a home is known.
    public static func defaultDirectory(_ env: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let xdg = env["XDG_STATE_HOME"], xdg.hasPrefix("/") { return xdg + "/secitem/high-water" }
        var home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 }
        if home == nil, let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { home = String(cString: dir) }
        guard let home, home.hasPrefix("/") else { return nil }
        return home + "/.local/state/secitem/high-water"
    }

    public var description: String { "in \(directory)" }

    /// The log of accepted restores.
    public var logPath: String { directory + "/accepted.log" }

    /// The file holding `store`'s mark.
    public func markPath(for store: WitnessedStore) -> String { directory + "/" + Self.fileName(store.identity) + ".mark" }

    public func mark(for store: WitnessedStore) throws(SecItemError) -> HighWaterMark? {
        try read(markPath(for: store), store)
    }

    @discardableResult
    public func advance(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark {
        try locked(store) { () throws(SecItemError) -> HighWaterMark in try advanceHoldingLock(store, to: state) }
    }

    public func reset(_ store: WitnessedStore, to state: HighWaterMark?, note: String) throws(SecItemError) {
        try locked(store) { () throws(SecItemError) in try resetHoldingLock(store, to: state, note: note) }
    }

    /// ``advance(_:to:)`` unless another thread or process is changing the mark right
    /// now: then nothing, without waiting (a reader recording a state it read; the one
    /// changing the mark is usually the writer recording its own commit, and replacing
    /// the file can take the disk's discard of the old one: readers waited for it).
    /// - Returns: The mark now, `nil` when another held the lock.
    @discardableResult
    package func advanceUnlessBusy(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark? {
        try locked(store, waiting: false) { () throws(SecItemError) -> HighWaterMark in try advanceHoldingLock(store, to: state) }
    }

    /// ``advance(_:to:)`` inside ``locked(_:_:)`` (a witness that keeps more than the file
    /// changes both under the one lock).
    package func advanceHoldingLock(_ store: WitnessedStore, to state: HighWaterMark) throws(SecItemError) -> HighWaterMark {
        let path = markPath(for: store)
        let current = try readFile(path, store)
        if let mark = current.mark, mark.generation >= state.generation { return mark }
        try write(path, store, state, inPlace: current.checked)
        return state
    }

    /// ``reset(_:to:note:)`` inside ``locked(_:_:)``; `before` is what the log line says the
    /// mark was (the file's, unless the caller knows better).
    package func resetHoldingLock(
        _ store: WitnessedStore, to state: HighWaterMark?, note: String, before known: HighWaterMark?? = nil
    ) throws(SecItemError) {
        let path = markPath(for: store)
        let file = try readFile(path, store)
        let before = known ?? file.mark
        if let state {
            try write(path, store, state, inPlace: file.checked)
        } else if unlink(path) != 0 && errno != ENOENT {
            throw ioError("removing", path)
        }
        let line = "\(Self.timestamp()) uid=\(getuid()) pid=\(getpid()) store=\(Self.oneLine(store.location)) "
            + "mark \(before?.description ?? "none") -> \(state?.description ?? "none"): \(Self.oneLine(note))\n"
        try append(logPath, line)
    }

    // MARK: Files

    /// The file name for an identity: 32 hex digits of its SHA-256 would need a
    /// dependency here; two 64-bit FNV-1a hashes (of the identity and of it reversed)
    /// are enough for a name, and the file repeats the identity, which is checked.
    package static func fileName(_ identity: String) -> String {
        func fnv(_ bytes: some Sequence<UInt8>) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
            return hash
        }
        let bytes = Array(identity.utf8)
        func bigEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }
        return HighWaterMark.hex(bigEndian(fnv(bytes)) + bigEndian(fnv(bytes.reversed())))  // "%016llx%016llx"
    }

    static func oneLine(_ text: String) -> String {
        // Printable ASCII and tabs, the usual identity and location, hold no line break:
        // no walk over Characters (grapheme breaking), which every mark read and write made.
        if text.utf8.allSatisfy({ ($0 >= 0x20 && $0 < 0x7F) || $0 == 0x09 }) { return text }
        return String(text.map { $0.isNewline ? " " : $0 })
    }

    /// Now, as ISO 8601 in UTC (`2026-12-02T05:40:00Z`), without a formatter: a
    /// writer records a mark after every commit.
    static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        guard gmtime_r(&now, &parts) != nil else { return "?" }
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    private func ioError(_ what: String, _ path: String, _ code: Int32 = errno) -> SecItemError {
        SecItemError(
            errSecIO,
            "cannot keep the keychain's rollback evidence: \(what) \(path) failed (\(String(cString: strerror(code)))); "
                + "fix the state directory, or set SECITEM_ROLLBACK_CHECK=off to go without the check")
    }

    /// Creates the directory (0700) when missing; refuses one another user owns or others can write.
    private func ensureDirectory() throws(SecItemError) {
        var st = stat()
        if stat(directory, &st) != 0 {
            var path = ""
            for part in directory.split(separator: "/") {
                path += "/" + part
                if mkdir(path, 0o700) != 0 && errno != EEXIST { throw ioError("creating", path) }
            }
            guard stat(directory, &st) == 0 else { throw ioError("creating", directory) }
        }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o022 == 0 else {
            throw SecItemError(
                errSecParam,
                "the rollback state directory \(directory) is not a directory of this user's that only they can write; "
                    + "the keychain's rollback evidence cannot be kept there")
        }
    }

    /// Runs `body` holding `store`'s lock file (`flock`): one change of its mark at a time
    /// among this user's processes.
    package func locked<R>(_ store: WitnessedStore, _ body: () throws(SecItemError) -> R) throws(SecItemError) -> R {
        try locked(store, waiting: true, body)!
    }

    /// ``locked(_:_:)``; without `waiting`, `nil` (and `body` not run) when another holds the lock.
    private func locked<R>(_ store: WitnessedStore, waiting: Bool, _ body: () throws(SecItemError) -> R)
        throws(SecItemError) -> R?
    {
        try ensureDirectory()
        let lockPath = directory + "/" + Self.fileName(store.identity) + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ioError("opening", lockPath) }
        defer { close(fd) }
        while flock(fd, waiting ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            if !waiting && errno == EWOULDBLOCK { return nil }
            guard errno == EINTR else { throw ioError("locking", lockPath) }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    private func read(_ path: String, _ store: WitnessedStore) throws(SecItemError) -> HighWaterMark? {
        try readFile(path, store).mark
    }

    /// The mark in `path`, and whether the file carries a `check` line (so is written in
    /// place from now on). A checked file whose check does not match is read again (a
    /// reader beside the writer's in-place write sees part of each); still unmatched after
    /// that, it is a write a power loss cut short: no mark, as an empty file.
    private func readFile(_ path: String, _ store: WitnessedStore) throws(SecItemError)
        -> (mark: HighWaterMark?, checked: Bool)
    {
        var attempt = 0
        while true {
            let bytes = try readBytes(path)
            guard let bytes else { return (nil, false) }
            switch Self.checkedBody(bytes) {
            case .unchecked:
                return (try parse(bytes[...], path, store), false)
            case .matching(let body):
                return (try parse(body, path, store), true)
            case .mismatched:
                attempt += 1
                if attempt >= 50 { return (nil, true) }
                // The writer's in-place write takes microseconds: let it finish.
                usleep(UInt32(min(attempt, 20) * 50))
            }
        }
    }

    /// What a mark file's `check` line says about the bytes before it.
    enum CheckedBody {
        /// No `check` line: a file written whole and renamed into place (before in-place writes).
        case unchecked
        /// The lines before the `check` line, which matched them.
        case matching(ArraySlice<UInt8>)
        /// A `check` line that does not match what precedes it.
        case mismatched
    }

    /// Splits a mark file at its first `check` line (what follows it, a longer earlier
    /// mark's tail, is not part of the mark) and checks the bytes before it.
    static func checkedBody(_ bytes: [UInt8]) -> CheckedBody {
        let marker = Array("\ncheck ".utf8)
        // Each line break, then the six bytes after it (not a comparison at every offset).
        var found: Int?
        var start = 0
        while let newline = bytes[start...].firstIndex(of: 0x0A), newline + marker.count <= bytes.count {
            if bytes[newline..<(newline + marker.count)].elementsEqual(marker) {
                found = newline + 1
                break
            }
            start = newline + 1
        }
        guard let at = found else { return .unchecked }
        let digits = bytes[(at + marker.count - 1)...].prefix { $0 != 0x0A }
        let body = bytes[..<at]
        guard digits.count == 16, String(decoding: digits, as: UTF8.self) == checksum(body) else { return .mismatched }
        return .matching(body)
    }

    /// 16 hex digits of the FNV-1a hash of a mark's lines (a torn read's detector, not a MAC).
    static func checksum(_ bytes: some Sequence<UInt8>) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The file's bytes (at most 16 KiB), `nil` when it does not exist.
    private func readBytes(_ path: String) throws(SecItemError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ioError("reading", path)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while bytes.count < 16_384 {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ioError("reading", path)
            }
            if n == 0 { break }
            bytes += buffer[0..<n]
        }
        return bytes
    }

    private func parse(_ bytes: ArraySlice<UInt8>, _ path: String, _ store: WitnessedStore) throws(SecItemError)
        -> HighWaterMark?
    {
        // A replacement a power loss cut short (the mark is not fsynced): no mark.
        if bytes.isEmpty { return nil }
        // Lines "name value"; a name given twice, the last. Only the five names read are
        // kept, as byte ranges (a mark is read after every commit another process makes).
        var version, generationText, digestText, storeText, idText: ArraySlice<UInt8>?
        var lineStart = bytes.startIndex
        while lineStart < bytes.endIndex {
            let lineEnd = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.endIndex
            let line = bytes[lineStart..<lineEnd]
            lineStart = lineEnd < bytes.endIndex ? lineEnd + 1 : lineEnd
            guard let space = line.firstIndex(of: 0x20) else { continue }
            let name = line[..<space], value = line[(space + 1)...]
            if name.elementsEqual(Self.versionName) {
                version = value
            } else if name.elementsEqual(Self.generationName) {
                generationText = value
            } else if name.elementsEqual(Self.digestName) {
                digestText = value
            } else if name.elementsEqual(Self.storeName) {
                storeText = value
            } else if name.elementsEqual(Self.storeIDName) {
                idText = value
            }
        }
        func text(_ field: ArraySlice<UInt8>?) -> String? { field.map { String(decoding: $0, as: UTF8.self) } }
        guard let version, version.elementsEqual([0x31]), let generation = text(generationText).flatMap({ Int64($0) }),
            let digest = text(digestText).flatMap(Self.unhex)
        else {
            throw SecItemError(
                errSecIO,
                "the rollback mark \(path) is damaged; remove it (the check then starts again from the store's current "
                    + "state) or run `secitem accept-restore`")
        }
        // Two identities with one file name: this store has no mark of its own yet.
        guard let storeText, storeText.elementsEqual(Self.oneLine(store.identity).utf8) else { return nil }
        let id = text(idText).flatMap { $0 == "-" ? nil : Self.unhex($0) }
        return HighWaterMark(generation: generation, digest: digest, storeID: id)
    }

    private static let versionName = Array("secitem-high-water-mark".utf8)
    private static let generationName = Array("generation".utf8)
    private static let digestName = Array("digest".utf8)
    private static let storeName = Array("store".utf8)
    private static let storeIDName = Array("store-id".utf8)

    package static func unhex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = Self.nibble(digits[i]), let lo = Self.nibble(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }

    /// Writes `state` as the mark: in place when the file already carries a `check` line
    /// (`inPlace`), else whole into a temporary file renamed over it (the first write, or
    /// over a file from before in-place writes, which a reader must never see half of).
    ///
    /// In place, because replacing the file frees the old one's blocks, which on ext4
    /// waits for their writeback: 0.4 ms per write on an idle virtio disk, 5-7 ms beside
    /// other builds, against microseconds for the write itself (issue 24). The mark is a
    /// few hundred bytes at offset 0, inside one disk sector: a power loss leaves the old
    /// bytes or the new (or, on a disk that tears sectors, a mismatched `check`: no mark,
    /// as an empty file). A reader that meets a write half done sees a mismatched `check`
    /// and reads again. Marks only grow longer (the generation's digits), except after a
    /// reset to a lower one: then the file is cut to the new length.
    private func write(_ path: String, _ store: WitnessedStore, _ state: HighWaterMark, inPlace: Bool) throws(SecItemError) {
        let body = """
            secitem-high-water-mark 1
            store \(Self.oneLine(store.identity))
            location \(Self.oneLine(store.location))
            generation \(state.generation)
            digest \(HighWaterMark.hex(state.digest))
            store-id \(state.storeID.map(HighWaterMark.hex) ?? "-")
            recorded \(Self.timestamp())

            """
        let text = Array(body.utf8) + Array("check \(Self.checksum(body.utf8))\n".utf8)
        if inPlace {
            let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd >= 0 {
                defer { close(fd) }
                var st = stat()
                guard fstat(fd, &st) == 0, writeAll(fd, text, at: 0) else { throw ioError("writing", path) }
                if st.st_size > text.count, ftruncate(fd, off_t(text.count)) != 0 { throw ioError("writing", path) }
                return
            }
            // Removed since it was read: written whole below.
        }
        let temporary = path + ".\(getpid()).new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ioError("creating", temporary) }
        let written = writeAll(fd, text)
        let code = errno
        close(fd)
        guard written else {
            unlink(temporary)
            throw ioError("writing", temporary, code)
        }
        guard rename(temporary, path) == 0 else {
            let failure = ioError("replacing", path)
            unlink(temporary)
            throw failure
        }
    }

    private func append(_ path: String, _ line: String) throws(SecItemError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ioError("opening", path) }
        defer { close(fd) }
        guard writeAll(fd, Array(line.utf8)), fsync(fd) == 0 else { throw ioError("writing", path) }
    }

    /// Writes all of `bytes`: at the file's offset, or with `pwrite` from `at`.
    private func writeAll(_ fd: Int32, _ bytes: [UInt8], at start: off_t? = nil) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { b in
                start.map { pwrite(fd, b.baseAddress, b.count, $0 + off_t(offset)) } ?? Glibc.write(fd, b.baseAddress, b.count)
            }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }
}
