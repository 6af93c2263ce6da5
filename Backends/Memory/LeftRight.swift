import Glibc
import Synchronization

/// Two copies of a value, so that readers never wait for a writer: readers read one
/// copy while the writer changes the other, then the writer turns readers to the
/// changed copy, waits for those still reading the old one to leave, and makes the
/// same change to it (Ramalhete and Correia's Left-Right).
///
/// A reader takes no lock: it announces itself on a counter of the current version,
/// reads the copy the writer last published, and leaves. A writer (one at a time, under a
/// mutex) does each change twice and may wait for readers, never the other way
/// round: with one thread adding without pause beside the readers, a readers–writer
/// lock made each reader wait out every insertion (a lone reader kept 61% of its
/// lookups, 2–15% before it spun; the scaling benchmark, issue 24).
///
/// A change is given as a plan: ``write(_:)``'s body looks at the writer's copy,
/// decides (or throws, changing nothing), and returns the change as a closure that
/// is applied to each copy in turn. The closure must leave both copies equal: it
/// gets the same state twice, so a change computed from its arguments alone (not
/// from the clock, not a new object per call) does.
///
/// The counters and the flag are `Synchronization` atomics and the writers' mutex a
/// `pthread_mutex_t`, all of which ThreadSanitizer sees.
final class LeftRight<Copy: AnyObject>: @unchecked Sendable {
    // @unchecked: a copy is changed only by the writer holding `writerLock`, and only
    // while no reader can be reading it: readers read the copy `leftRight` names; the
    // writer changes the other one, publishes it, then waits for both versions' reader
    // counters to drain (every reader that could have seen the old flag) before it
    // changes the old one. Sequentially consistent atomics give the ordering both ways.
    private let left: Copy
    private let right: Copy
    /// The copies as readers reach them: no retain and release per read (two atomic
    /// operations on one object's count, which every reading core would share).
    private let copies: (Unmanaged<Copy>, Unmanaged<Copy>)
    /// Which copy readers read: 0 `left`, 1 `right`.
    private let leftRight = Atomic<Int>(0)
    /// Which version's counters new readers announce themselves on.
    private let versionIndex = Atomic<Int>(0)
    /// The readers of each version, spread over ``stripes`` counters (a reader picks
    /// one by its thread), each on its own 128-byte stretch: two readers on two cores
    /// then rarely share a cache line, where one counter made every lookup fetch it
    /// from the other core twice. Counter `i` of version `v` is at `v * stride *
    /// stripes + i * stride`.
    private let counters: InlineArray<256, Atomic<Int>> = InlineArray { _ in Atomic<Int>(0) }
    private static var stripes: Int { 8 }
    private static var stride: Int { 16 }
    private let writerLock: UnsafeMutablePointer<pthread_mutex_t>

    /// Makes the two copies by calling `make` twice: they must be equal and share no
    /// mutable state.
    init(_ make: () -> Copy) {
        left = make()
        right = make()
        copies = (Unmanaged.passUnretained(left), Unmanaged.passUnretained(right))
        writerLock = .allocate(capacity: 1)
        pthread_mutex_init(writerLock, nil)
    }

    deinit {
        pthread_mutex_destroy(writerLock)
        writerLock.deallocate()
    }

    /// The counter of version `version` the calling thread announces itself on.
    @inline(__always)
    private static func counter(_ version: Int) -> Int {
        let thread = UInt64(UInt(bitPattern: Int(bitPattern: pthread_self())))
        let stripe = Int(truncatingIfNeeded: (thread &* 0x9E37_79B9_7F4A_7C15) >> 61)  // 3 bits: 8 stripes
        return (version &* stripes &+ stripe) &* stride
    }

    /// Runs `body` on the published copy, at the same time as other readers and a
    /// writer. `body` only reads.
    func read<Result>(_ body: (Copy) -> Result) -> Result {
        let counter = Self.counter(versionIndex.load(ordering: .sequentiallyConsistent))
        counters[counter].wrappingAdd(1, ordering: .sequentiallyConsistent)
        defer { counters[counter].wrappingSubtract(1, ordering: .sequentiallyConsistent) }
        let copy = leftRight.load(ordering: .sequentiallyConsistent) == 0 ? copies.0 : copies.1
        return copy._withUnsafeGuaranteedRef(body)
    }

    /// Runs `plan` on the writer's copy (no reader reads it), then applies the change
    /// it returns (`nil`: none) to both copies, publishing the first before changing
    /// the second. Writers run one at a time. When `plan` throws, neither copy changes.
    func write<Result, E: Error>(_ plan: (Copy) throws(E) -> (result: Result, change: ((Copy) -> Void)?)) throws(E) -> Result {
        pthread_mutex_lock(writerLock)
        defer { pthread_mutex_unlock(writerLock) }
        let published = leftRight.load(ordering: .sequentiallyConsistent)
        let spare = published == 0 ? right : left
        let (result, plannedChange) = try plan(spare)
        guard let change = plannedChange else { return result }
        change(spare)
        leftRight.store(1 - published, ordering: .sequentiallyConsistent)
        // New readers now read `spare`. Those that read the old flag announced
        // themselves on a counter of the current version before reading it: toggle
        // the version and wait for both versions' counters to drain (the next one
        // first, so that readers arriving meanwhile cannot keep it from draining for ever).
        let version = versionIndex.load(ordering: .sequentiallyConsistent)
        waitForReaders(1 - version)
        versionIndex.store(1 - version, ordering: .sequentiallyConsistent)
        waitForReaders(version)
        change(published == 0 ? left : right)
        return result
    }

    /// Waits until no reader is announced on a counter of `version`. Readers stay a
    /// microsecond or so; a reader preempted mid-lookup is waited for by yielding.
    private func waitForReaders(_ version: Int) {
        for stripe in 0..<Self.stripes {
            let counter = (version &* Self.stripes &+ stripe) &* Self.stride
            var spins = 0
            while counters[counter].load(ordering: .sequentiallyConsistent) != 0 {
                spins += 1
                if spins > 64 { sched_yield() }
            }
        }
    }
}
