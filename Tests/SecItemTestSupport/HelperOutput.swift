// What the helper programs the tests start as child processes (SecItemSQLiteHelper,
// SecItemPostgreSQLHelper) print: one protocol for both, read by ChildProcess.
import Foundation

/// Writes one line to standard output at once (unbuffered: the test reads it while
/// the helper still runs, and may kill the helper right after).
public func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Ends the helper on a failure it cannot go on from: `helper: <message>` on
/// standard error, exit status 2.
public func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("helper: " + message + "\n").utf8))
    exit(2)
}
