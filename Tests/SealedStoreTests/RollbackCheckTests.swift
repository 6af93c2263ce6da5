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
