import Foundation
import SecItemSecurity
import Synchronization

/// A passphrase (or any short secret text) held in a heap buffer of its own that
/// is zeroed when the last copy goes away, and that never prints.
///
/// `description`, `debugDescription` and `dump` show `<redacted>`; the bytes are
/// reached only through ``withUTF8(_:)`` or, where an API takes a `String`,
/// ``exposedString()``. Copies share one buffer (a class inside), so no stray
/// copy of the bytes outlives the value. A `String` the passphrase was made from
/// cannot be zeroed by this type: read secrets from a file or a terminal straight
/// into ``init(bytes:)`` where it matters.
public struct Passphrase: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private final class Storage: Sendable {
        // Written once in init, read-only after, zeroed in deinit: nothing mutates it
        // while it is shared, so sharing it between threads is safe.
        nonisolated(unsafe) let buffer: UnsafeMutableRawBufferPointer
        let count: Int
        /// Tests only: called from `deinit` with the buffer after it was zeroed.
        let releaseObservers = Mutex<[@Sendable (UnsafeRawBufferPointer) -> Void]>([])

        init<C: Collection<UInt8>>(_ bytes: C) {
            count = bytes.count
            buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 1)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            buffer.copyBytes(from: bytes)
        }

        deinit {
            explicit_bzero(buffer.baseAddress!, buffer.count)
            for observer in releaseObservers.withLock({ $0 }) { observer(UnsafeRawBufferPointer(buffer)) }
            buffer.deallocate()
        }
    }

    private let storage: Storage

    /// A passphrase holding the UTF-8 bytes of `text`.
    public init(_ text: String) {
        storage = Storage(Array(text.utf8))
    }

    /// A passphrase holding `bytes` (UTF-8 text is expected but not required).
    public init<C: Collection<UInt8>>(bytes: C) {
        storage = Storage(bytes)
    }

    /// Whether the passphrase is empty.
    public var isEmpty: Bool { storage.count == 0 }

    /// The number of bytes (UTF-8 code units).
    public var byteCount: Int { storage.count }

    /// The number of Unicode scalars (characters, for a length rule), counted
    /// from the bytes without making a `String` of them.
    public var scalarCount: Int {
        withUTF8 { bytes in bytes.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) } }
    }

    /// Tests only: `observer` is called when the last copy of this passphrase goes
    /// away, with its buffer just after it was zeroed and before it is freed (so a
    /// test can check both that the passphrase was dropped and that it was wiped).
    package func onRelease(_ observer: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) {
        storage.releaseObservers.withLock { $0.append(observer) }
    }

    /// Calls `body` with the passphrase's bytes; they must not escape `body`.
    public func withUTF8<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<storage.count]))
    }

    /// The passphrase as a `String`, for an API that takes one (the copy it returns
    /// is not zeroed: hand it straight to that API and keep nothing).
    public func exposedString() -> String {
        withUTF8 { String(decoding: $0, as: UTF8.self) }
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "Passphrase(<redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
