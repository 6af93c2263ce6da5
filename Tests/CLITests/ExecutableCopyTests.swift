import Foundation
import Testing
import SecItemTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A test that copies a program and starts it while other tests start children on
/// other threads: a child forked between the copy's open and its close holds the
/// copy open for writing until it execs, and the kernel refuses to exec a file open
/// for writing (ETXTBSY, "Text file busy"). CI's test-without-services step failed
/// once that way (AccessGroupTests' `legacy` copy). The copy is written with
/// O_CLOEXEC and the start retries a busy file, so a test never sees it.
@Suite("Copied programs start while other threads start children")
struct ExecutableCopyTests {
    @Test("60 copies of the helper each start at once while four threads spawn children in a loop")
    func copiesStartBesideSpawns() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let stop = Flag()
        let spawners = (0..<4).map { _ in
            Thread.detachNewThreadReturning {
                var count = 0
                while !stop.isSet {
                    _ = try? ChildProcess.run("/bin/true", [])
                    count += 1
                }
                return count
            }
        }
        defer { stop.set() }
        var failures: [String] = []
        for index in 0..<60 {
            let program = try AppProgram(named: "copy\(index)", in: root)
            do {
                let result = try ChildProcess.run(program.path.path, ["whoami"], environment: ["HOME": root.path, "SECITEM_BACKEND": "memory"])
                if result.status != 0 { failures.append("copy\(index): status \(result.status) \(result.stderr)") }
            } catch {
                failures.append("copy\(index): \(error)")
            }
        }
        stop.set()
        let spawned = spawners.map { $0.wait() }.reduce(0, +)
        #expect(spawned > 0, "the other threads started children")
        #expect(failures.isEmpty, "\(failures.count) of 60 copies did not start: \(failures.prefix(3))")
    }
}

/// A flag one thread sets and others read.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

extension Thread {
    /// Runs `body` on a new thread; `wait()` returns its result.
    fileprivate static func detachNewThreadReturning<T: Sendable>(_ body: @escaping @Sendable () -> T) -> ThreadResult<T> {
        let result = ThreadResult<T>()
        Thread.detachNewThread { result.put(body()) }
        return result
    }
}

fileprivate final class ThreadResult<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: T?
    func put(_ v: T) { condition.lock(); value = v; condition.broadcast(); condition.unlock() }
    func wait() -> T {
        condition.lock(); defer { condition.unlock() }
        while value == nil { condition.wait() }
        return value!
    }
}
