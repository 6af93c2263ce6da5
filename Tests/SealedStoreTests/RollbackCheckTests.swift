import Foundation
import SecItemCore
import SecItemSealedStore
import Synchronization
import Testing

/// The rollback check's rules on their own, against a real state directory: what a
/// state read proves on a single file and on a replicated store (PostgreSQL: a failover
/// may lose the newest commit a reader saw, which is no rollback), and an empty mark
/// file (what a lost, never-flushed replacement can leave).
@Suite struct RollbackCheckTests {
    private let directory = NSTemporaryDirectory() + "secitem-rollback-check-\(UUID().uuidString)"
    private var witness: StateDirectoryWitness { StateDirectoryWitness(directory: directory) }
    private let store = WitnessedStore(identity: "test:\(UUID().uuidString)", location: "the test store")

    private func state(_ generation: Int64, _ byte: UInt8) -> HighWaterMark {
        HighWaterMark(generation: generation, digest: [UInt8](repeating: byte, count: 16))
    }

    private func check(replicated: Bool) -> RollbackCheck {
        RollbackCheck(mode: .enforce, witness: witness, store: store, confirmsOnlyPredecessors: replicated)
    }

    private func status(_ body: () throws(SecItemError) -> Void) -> OSStatus {
        do throws(SecItemError) {
            try body()
            return errSecSuccess
        } catch {
            return error.status
        }
    }

    @Test("a single file: a state below one this host read is a rollback, for this process and for a new one")
    func fileReadIsEvidence() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = check(replicated: false)
        try first.check(state(4, 4))
        try first.check(state(5, 5))
        #expect(try witness.mark(for: store) == state(5, 5))
        #expect(status { () throws(SecItemError) in try first.check(state(4, 4)) } == errSecDecode)
        #expect(status { () throws(SecItemError) in try check(replicated: false).check(state(4, 4)) } == errSecDecode)
    }

    @Test("a replicated store: losing the newest state a reader saw is no rollback; two generations back is")
    func replicatedReadProvesItsPredecessor() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reader = check(replicated: true)
        try reader.check(state(4, 4))
        try reader.check(state(5, 5))
        // The mark holds generation 4 alone: seeing 5 proved 4 was confirmed, not 5.
        let mark = try #require(try witness.mark(for: store))
        #expect(mark.generation == 4 && mark.digest.isEmpty, "\(mark)")
        // A failover lost the unconfirmed 5 and another host committed a different 5.
        try reader.check(state(4, 4))
        try reader.check(state(5, 0x55))
        // A store put back two generations: refused by this process and by a new one.
        #expect(status { () throws(SecItemError) in try reader.check(state(3, 3)) } == errSecDecode)
        #expect(status { () throws(SecItemError) in try check(replicated: true).check(state(3, 3)) } == errSecDecode)
    }

    @Test("a replicated store: a state this connection committed is evidence whole")
    func replicatedCommitIsEvidence() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let writer = check(replicated: true)
        try writer.check(state(4, 4))
        writer.committed(state(5, 5))
        #expect(try witness.mark(for: store) == state(5, 5))
        #expect(status { () throws(SecItemError) in try writer.check(state(4, 4)) } == errSecDecode)
        #expect(status { () throws(SecItemError) in try check(replicated: true).check(state(5, 0x55)) } == errSecDecode)
    }

    @Test("an empty mark file counts as no mark (the check starts again), a damaged one is an error")
    func emptyMarkFile() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try check(replicated: false).check(state(7, 7))
        let path = witness.markPath(for: store)
        try Data().write(to: URL(fileURLWithPath: path))
        #expect(try witness.mark(for: store) == nil)
        try check(replicated: false).check(state(6, 6))
        #expect(try witness.mark(for: store) == state(6, 6))
        try Data("garbage\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(status { () throws(SecItemError) in _ = try witness.mark(for: store) } == errSecIO)
    }

    private func inode(_ path: String) -> UInt64 {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_ino) : 0
    }

    /// Issue 24: replacing the mark file on every write freed the old file's blocks, which
    /// on ext4 waits for their writeback (0.4 ms an idle disk, 5-7 ms a busy one, per write).
    @Test("a mark is rewritten in place once it carries a check line; a file from before is replaced whole first")
    func markWrittenInPlace() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = witness.markPath(for: store)
        // A mark as written before in-place writes (no check line): read as it is.
        try check(replicated: false).check(state(3, 3))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let unchecked = text.components(separatedBy: "\n").filter { !$0.hasPrefix("check ") }.joined(separator: "\n")
        try unlinkAndWrite(path, unchecked)
        #expect(try witness.mark(for: store) == state(3, 3))
        let old = inode(path)
        // The first write over it is whole (a reader must never see half of an unchecked file)...
        try witness.advance(store, to: state(4, 4))
        #expect(inode(path) != old)
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\ncheck "))
        // ...and later ones are in place.
        let checked = inode(path)
        try witness.advance(store, to: state(5, 5))
        try witness.advance(store, to: state(1_000_000_000, 6))
        #expect(inode(path) == checked)
        #expect(try witness.mark(for: store) == state(1_000_000_000, 6))
        // A reset to a shorter mark cuts the file: nothing of the longer one is left after it.
        try witness.reset(store, to: state(7, 7), note: "test")
        #expect(inode(path) == checked)
        #expect(try witness.mark(for: store) == state(7, 7))
        let after = try String(contentsOfFile: path, encoding: .utf8)
        #expect(after.hasSuffix("\n") && after.components(separatedBy: "\ncheck ").count == 2, "\(after)")
    }

    @Test("a mark whose check line does not match (a write a power loss cut short) counts as no mark; the next check records")
    func tornMarkIsNoMark() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = witness.markPath(for: store)
        try check(replicated: false).check(state(8, 8))
        try witness.advance(store, to: state(9, 9))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        // The generation's line from another write than the rest of the file.
        try unlinkAndWrite(path, text.replacingOccurrences(of: "generation 9\n", with: "generation 2\n"))
        #expect(try witness.mark(for: store) == nil)
        try check(replicated: false).check(state(10, 10))
        #expect(try witness.mark(for: store) == state(10, 10))
        // Text after the check line (a longer earlier mark's tail) is not part of the mark.
        let good = try String(contentsOfFile: path, encoding: .utf8)
        try unlinkAndWrite(path, good + "generation 99\n")
        #expect(try witness.mark(for: store) == state(10, 10))
    }

    private func unlinkAndWrite(_ path: String, _ text: String) throws {
        unlink(path)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Issue 24: with one thread adding without pause, a reader that saw the writer's
    /// commit before the writer recorded it waited on the mark's lock while the writer
    /// replaced the mark file (a disk discard of the old one, under the lock).
    @Test("a state read while another holds the mark's lock: the check neither waits nor fails; the next check records")
    func readerDoesNotWaitForTheMarkLock() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reader = check(replicated: false)
        try reader.check(state(4, 4))
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<OSStatus?>(nil)
        let witness = witness
        let next = state(5, 5)
        // Used by the one thread below while this one only waits for it.
        nonisolated(unsafe) let waitingReader = reader
        var inTime = false
        try witness.locked(store) { () throws(SecItemError) in
            // The writer, recording its commit: the lock is held until the reader is done or 5 s passed.
            let thread = Thread {
                let result: OSStatus
                do throws(SecItemError) {
                    try waitingReader.check(next)
                    result = errSecSuccess
                } catch {
                    result = error.status
                }
                outcome.withLock { $0 = result }
                done.signal()
            }
            thread.start()
            inTime = done.wait(timeout: .now() + 5) == .success
        }
        if !inTime { done.wait() }
        #expect(inTime, "the check waited for the mark's lock")
        #expect(outcome.withLock { $0 } == errSecSuccess)
        // Not recorded while busy: the mark lags until the next check records.
        #expect(try witness.mark(for: store) == state(4, 4))
        try reader.check(state(6, 6))
        #expect(try witness.mark(for: store) == state(6, 6))
    }
}
