// Kept apart from the files under test, so they import only what an Apple file would.
import SecItem
import SecItemMemory

/// A fresh memory store, so each test has its own keychain.
func isolatedStore() -> any SecItemBackend {
    MemoryBackend()
}
