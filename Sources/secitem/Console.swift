import CSecItemProcess
import Foundation
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

    static func writeData(_ data: Data) {
        writeBytes(Array(data), to: STDOUT_FILENO)
    }

    static func error(_ text: String) {
        writeBytes(Array(text.utf8), to: STDERR_FILENO)
    }

    private static func writeBytes(_ bytes: [UInt8], to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
    }

    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Reads all of standard input. With `stripNewline`, exactly one trailing
    /// `\n` is dropped (a `\r` before it is kept: the bytes are the secret's).
    static func readAllStdin(stripNewline: Bool = true) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        defer { csecitem_wipe(&buffer, buffer.count) }
        while true {
            let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        if stripNewline, data.last == 0x0A { data.removeLast() }
        return data
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
    /// dropping exactly one trailing newline unless `raw`.
    static func readSecret(prompt: String, confirm: String? = nil, raw: Bool = false) throws(CommandError) -> Data {
        guard stdinIsTerminal else { return readAllStdin(stripNewline: !raw) }
        let first = try readHidden(prompt)
        if let confirm {
            let second = try readHidden(confirm)
            guard first == second else { throw CommandError(.failure, "the two entries do not match") }
        }
        return first
    }

    /// One line from the terminal with echo off. SIGINT, SIGTERM, SIGHUP or SIGQUIT
    /// meanwhile restore the terminal before the process ends (CSecItemProcess).
    private static func readHidden(_ prompt: String) throws(CommandError) -> Data {
        error(prompt)
        let hidden = csecitem_prompt_begin(STDIN_FILENO) == 0
        defer { if hidden { csecitem_prompt_end() } }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        defer { csecitem_wipe(&bytes, bytes.count) }
        var byte: UInt8 = 0
        var ended = false
        while true {
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
        return Data(bytes)
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
