import Dispatch
import SecItemSQLite
import Synchronization
import Testing
#if SECITEM_THREAD_SANITIZER
import SecItemCore  // its ThreadSanitizerMutex is this module's Mutex there
#endif

/// The registry that closes file backends still open at exit (`OpenBackends`): backends
/// are opened and dropped on many threads at once (a server, the test suite itself).
@Suite("File backend: the registry of open backends")
struct OpenBackendsTests {
    final class Tracked: Sendable {
        let registry: OpenObjects<Tracked>
        init(_ registry: OpenObjects<Tracked>) {
            self.registry = registry
            registry.register(self)
        }
        deinit { registry.unregister(ObjectIdentifier(self)) }
    }

    /// Two threads register objects and hand each to the other to drop, so one thread's
    /// `register` runs while the other drops an object's last reference. A registry that
    /// loads its weak references under its lock ran an object's `deinit` there, whose
    /// `unregister` locked again: "Recursive call to lock Mutex" stopped the process (CI's
    /// ASan run, in TamperTests, which opens file backends on parallel test threads).
    @Test("objects registered on one thread and dropped on another: no recursive lock, none left behind")
    func registerAndDropAcrossThreads() {
        let registry = OpenObjects<Tracked>()
        let handoff = Mutex<Tracked?>(nil)
        let rounds = 100_000
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<rounds {
                let mine = Tracked(registry)
                // The other thread's object comes out; its last reference is dropped here.
                let theirs = handoff.withLock { slot in
                    defer { slot = mine }
                    return slot
                }
                _ = theirs
            }
        }
        handoff.withLock { $0 = nil }
        #expect(registry.count == 0)
    }

    @Test("removeAll returns the live objects and empties the registry")
    func removeAllReturnsLiveObjects() {
        let registry = OpenObjects<Tracked>()
        let kept = (0..<3).map { _ in Tracked(registry) }
        do { _ = Tracked(registry) }  // dropped at once: unregistered by its deinit
        #expect(registry.count == 3)
        let live = registry.removeAll()
        #expect(live.count == 3)
        #expect(Set(live.map(ObjectIdentifier.init)) == Set(kept.map(ObjectIdentifier.init)))
        #expect(registry.count == 0)
    }
}
