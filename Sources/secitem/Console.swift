import CSecItemProcess
import Foundation
import SecItemCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Standard streams, terminal checks, secret prompts and progress.
enum Console {
    static func write(_ text: String) {
        writeBytes(Array(text.utf8), to: STDOUT_FILENO)
    }

    /// Writes `data`'s bytes to standard output from where they are (no copy is made).
    static func writeData(_ data: Data) {
        data.withUnsafeBytes { writeRaw($0, to: STDOUT_FILENO) }
    }

    static func error(_ text: String) {
        writeBytes(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Writes `bytes` to standard output from where they are.
    static func writeBytes(_ bytes: [UInt8]) {
        writeBytes(bytes, to: STDOUT_FILENO)
    }

    private static func writeBytes(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { writeRaw($0, to: fd) }
    }

    private static func writeRaw(_ bytes: UnsafeRawBufferPointer, to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
    }

    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Reads all of standard input into a zeroing ``Passphrase``. With
    /// `stripNewline`, exactly one trailing `\n` is dropped (a `\r` before it is
    /// kept: the bytes are the secret's). The buffer it grows in is zeroed at each
    /// growth and at the end, so no partial copy is left on the heap.
    static func readAllStdinSecret(stripNewline: Bool = true) -> Passphrase {
        var capacity = 4096
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        var count = 0
        defer {
            csecitem_wipe(buffer.baseAddress, capacity)
            buffer.deallocate()
        }
        while true {
            if count == capacity {
                let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity * 2, alignment: 1)
                grown.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: count)
                csecitem_wipe(buffer.baseAddress, capacity)
                buffer.deallocate()
                buffer = grown
                capacity *= 2
            }
            let n = read(STDIN_FILENO, buffer.baseAddress! + count, capacity - count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            count += n
        }
        if stripNewline, count > 0, buffer[count - 1] == 0x0A { count -= 1 }
        return Passphrase(bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    /// Reads one line from standard input (without its newline), or `nil` at end of input.
    static func readLine() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(STDIN_FILENO, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == 0x0A { break }
            bytes.append(byte)
        }
        if bytes.last == 0x0D { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads a secret: on a terminal, prompts on stderr with echo off (and asks
    /// again to confirm when `confirm` is given); otherwise reads all of stdin,
    /// dropping exactly one trailing newline unless `raw`. Held in a zeroing
    /// ``Passphrase`` from the first byte read.
    static func readSecretPassphrase(prompt: String, confirm: String? = nil, raw: Bool = false) throws(CommandError)
        -> Passphrase
    {
        guard stdinIsTerminal else { return readAllStdinSecret(stripNewline: !raw) }
        let first = try readHidden(prompt)
        if let confirm {
            let second = try readHidden(confirm)
            let same = first.withUTF8 { a in second.withUTF8 { b in a.elementsEqual(b) } }
            guard same else { throw CommandError(.failure, "the two entries do not match") }
        }
        return first
    }

    /// ``readSecretPassphrase(prompt:confirm:raw:)`` as `Data`, for an item's
    /// password (the `Data` goes to the keychain API, which takes `Data`).
    static func readSecret(prompt: String, confirm: String? = nil, raw: Bool = false) throws(CommandError) -> Data {
        let secret = try readSecretPassphrase(prompt: prompt, confirm: confirm, raw: raw)
        return secret.withUTF8 { Data($0) }
    }

    /// One line from the terminal with echo off. SIGINT, SIGTERM, SIGHUP or SIGQUIT
    /// meanwhile restore the terminal before the process ends (CSecItemProcess).
    ///
    /// The prompt is written once echo is off and the handlers are in place (as
    /// readpassphrase(3) does): what is typed after the prompt shows is never echoed
    /// nor flushed, and a signal after it always restores the terminal.
    private static func readHidden(_ prompt: String) throws(CommandError) -> Passphrase {
        let hidden = csecitem_prompt_begin(STDIN_FILENO) == 0
        defer { if hidden { csecitem_prompt_end() } }
        error(prompt)
        // Fixed capacity, so the array never reallocates and leaves a copy behind.
        let limit = 64 << 10
        var bytes: [UInt8] = []
        bytes.reserveCapacity(limit)
        defer { csecitem_wipe(&bytes, bytes.count) }
        var byte: UInt8 = 0
        var ended = false
        while bytes.count < limit {
            let n = read(STDIN_FILENO, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            if byte == 0x0A {
                ended = true
                break
            }
            bytes.append(byte)
        }
        byte = 0
        guard ended || !bytes.isEmpty else { throw CommandError(.failure, "no input") }
        if bytes.last == 0x0D { bytes.removeLast() }
        return Passphrase(bytes: bytes)
    }

    /// Asks a yes/no question on stderr and reads the answer from stdin.
    static func confirm(_ question: String) -> Bool {
        error("\(question) [y/N] ")
        guard let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return answer == "y" || answer == "yes"
    }
}

/// A progress line on stderr, shown only when stderr is a terminal and the run is long.
struct Progress {
    let label: String
    let total: Int
    private let enabled: Bool
    private var lastShown = -1

    /// - Parameter threshold: below this many items nothing is shown.
    init(_ label: String, total: Int, threshold: Int = 20) {
        self.label = label
        self.total = total
        enabled = Console.stderrIsTerminal && total >= threshold
    }

    mutating func update(_ done: Int) {
        guard enabled else { return }
        let percent = total == 0 ? 100 : done * 100 / total
        guard percent != lastShown else { return }
        lastShown = percent
        Console.error("\r\(label): \(done)/\(total) (\(percent)%)")
    }

    func finish() {
        guard enabled else { return }
        Console.error("\r\u{1B}[K")
    }
}
