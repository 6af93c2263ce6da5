// The one child-process runner of the test targets: the CLI, the helpers, the
// example programs, secret-tool, python3, dbus-daemon and gnome-keyring.
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A test could not set up what it needs (a missing program, a child that did
/// not answer): the test fails loudly with this description.
public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What a finished child process left.
public struct ProcessOutput: Sendable {
    public var status: Int32
    /// Standard output, as bytes.
    public var stdoutData: Data
    /// Standard output as UTF-8 text.
    public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    /// Standard error as UTF-8 text.
    public var stderr: String
}

/// A running child process: standard input a pipe the test writes to, standard
/// output and error files (so a chatty child never blocks on a full pipe, and
/// the test can read what it printed so far at any moment).
///
/// `@unchecked Sendable`: `Process` is not `Sendable`; a `ChildProcess` is driven by
/// one test at a time, and its files and pipe are safe to use from any thread.
public final class ChildProcess: @unchecked Sendable {
    public private(set) var process = Process()
    private var input = Pipe()
    private let directory: URL
    private let outURL: URL
    private let errURL: URL
    private var inputClosed = false

    /// Starts `executable` with `arguments`; `environment` replaces the inherited
    /// one when given. Standard error goes to a file unless `inheritStderr`.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, inheritStderr: Bool = false
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("secitem-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        outURL = directory.appendingPathComponent("out")
        errURL = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let output = try FileHandle(forWritingTo: outURL)
        let errors = inheritStderr ? FileHandle.standardError : try FileHandle(forWritingTo: errURL)
        // A program a test has just copied can be briefly "busy" (ETXTBSY): a child
        // another thread forked while the copy was open for writing holds it open
        // until that child execs, a few milliseconds at most. Start again then.
        var attempt = 0
        while true {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            if let environment { process.environment = environment }
            process.standardInput = input
            process.standardOutput = output
            process.standardError = errors
            do {
                try process.run()
                return
            } catch {
                attempt += 1
                if Self.isBusyText(error), attempt < 200 {
                    usleep(10_000)
                    process = Process()
                    input = Pipe()
                    continue
                }
                try? FileManager.default.removeItem(at: directory)
                throw TestSetupError("cannot start \(executable): \(error)")
            }
        }
    }

    /// Whether `error` is the kernel refusing to run a file open for writing somewhere.
    private static func isBusyText(_ error: any Error) -> Bool {
        var current: NSError? = error as NSError
        while let e = current {
            if e.domain == NSPOSIXErrorDomain, e.code == Int(ETXTBSY) { return true }
            current = e.userInfo[NSUnderlyingErrorKey] as? NSError
        }
        return false
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a command to completion with `stdin` as its input, killing it after `timeout`.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
        timeout: Duration = .seconds(60)
    ) throws -> ProcessOutput {
        let child = try ChildProcess(executable, arguments, environment: environment)
        if let stdin { try child.send(stdin) }
        child.closeInput()
        return try child.finish(timeout: timeout)
    }

    public var processIdentifier: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Writes to the child's standard input.
    public func send(_ data: Data) throws {
        try input.fileHandleForWriting.write(contentsOf: data)
    }

    /// Closes the child's standard input (many children exit at end of input).
    public func closeInput() {
        guard !inputClosed else { return }
        inputClosed = true
        try? input.fileHandleForWriting.close()
    }

    /// Sends `signal` (SIGKILL by default: children spawned from a test thread may
    /// inherit a mask that blocks SIGTERM).
    public func signal(_ signal: Int32 = SIGKILL) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Everything the child has printed on standard output so far, a prompt without
    /// its newline included.
    public var printed: String { String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self) }

    /// Everything the child has printed on standard error so far.
    public var printedErrors: String { String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self) }

    /// The complete lines the child has printed on standard output so far.
    public var lines: [String] {
        let data = (try? Data(contentsOf: outURL)) ?? Data()
        var out = data.split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        out.removeLast()  // the part after the last newline is not a complete line yet
        return out
    }

    /// Waits until the child has printed line `index` (0-based) and returns it.
    /// - Throws: `TestSetupError` when the child exits first or `timeout` passes.
    public func line(_ index: Int, timeout: Duration = .seconds(30)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let current = lines
            if current.count > index { return current[index] }
            if !process.isRunning && lines.count <= index {
                throw TestSetupError("the child exited (status \(process.terminationStatus)) before printing line \(index + 1)")
            }
            if ContinuousClock.now > deadline {
                throw TestSetupError("the child printed no line \(index + 1) within \(timeout)")
            }
            usleep(2_000)
        }
    }

    /// Waits for the child to exit (killing it after `timeout`) and returns what it left.
    /// - Throws: `TestSetupError` when it had to be killed.
    public func finish(timeout: Duration = .seconds(60)) throws -> ProcessOutput {
        closeInput()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now > deadline {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                let name = process.executableURL?.lastPathComponent ?? "the child"
                throw TestSetupError("\(name) \(process.arguments?.first ?? "") did not finish within \(timeout)")
            }
            usleep(2_000)
        }
        process.waitUntilExit()
        return ProcessOutput(
            status: process.terminationStatus, stdoutData: (try? Data(contentsOf: outURL)) ?? Data(),
            stderr: String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self))
    }
}

/// Programs the tests run: on PATH, or built by the package next to the tests.
public enum Executables {
    /// The program `name` on PATH.
    /// - Throws: `TestSetupError` naming the program (scripts/install-deps installs it).
    public static func which(_ name: String) throws -> String {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw TestSetupError("\(name) is not installed (scripts/install-deps installs it)")
    }

    /// The package's executable `name`, built next to the test bundle.
    /// - Throws: `TestSetupError` when it was not built.
    public static func built(_ name: String) throws -> String {
        var starts = [URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()]
        if let exe = Bundle.main.executableURL { starts.append(exe.deletingLastPathComponent()) }
        for start in starts {
            var dir = start
            while dir.pathComponents.count > 1 {
                let path = dir.appendingPathComponent(name).path
                if FileManager.default.isExecutableFile(atPath: path) { return path }
                dir.deleteLastPathComponent()
            }
        }
        throw TestSetupError("\(name) was not built next to the tests (swift build --build-tests)")
    }
}
