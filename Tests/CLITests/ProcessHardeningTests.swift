import Foundation
import SecItemTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 14: the command's own process leaks nothing (core dumps, environment, terminal).
@Suite("secitem process hardening")
struct ProcessHardeningTests {
    @Test("no core dumps, and secrets from the environment are wiped from /proc/PID/environ")
    func coreAndEnvironment() throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        let marker = "env-secret-\(UUID().uuidString)"
        // Blocked reading the password from stdin: the process is alive and has read its environment.
        // It starts with core dumps allowed (the shell raises the soft limit), so the check can fail.
        var env = cli.environment
        env["SECITEM_PASSPHRASE"] = marker
        env["SECITEM_EXPORT_PASSPHRASE"] = marker + "-x"
        env["SECITEM_KEY_SOURCE"] = "passphrase"
        let child = try ChildProcess(
            "/bin/sh",
            ["-c", "ulimit -S -c unlimited && exec \"$0\" \"$@\"", CLI.executable.path, "add-generic-password", "-a", "a", "-s", "s", "-w", "-"],
            environment: env)
        let pid = child.processIdentifier
        var limits = ""
        // /proc/PID/limits shows the limit once main has run; poll until the process got there.
        let hardened = Wait.holds(within: .seconds(20)) {
            limits = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
            return limits.split(separator: "\n").contains {
                $0.hasPrefix("Max core file size") && $0.split(separator: " ").dropFirst(4).first == "0"
            }
        }
        #expect(hardened, "RLIMIT_CORE is not 0:\n\(limits)")
        // The process waits for its password on stdin indefinitely: by then it must have wiped its environment.
        var environ = Data()
        // (Only once the shell has become secitem, and /proc shows an environment at all:
        // mid-exec it reads as empty.)
        _ = Wait.holds(within: .seconds(20)) {
            let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
            environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
            return cmdline.range(of: Data("add-generic-password".utf8)) != nil && !environ.isEmpty
                && environ.range(of: Data(marker.utf8)) == nil
        }
        #expect(!environ.isEmpty)
        #expect(environ.range(of: Data(marker.utf8)) == nil, "the passphrase is still in /proc/\(pid)/environ")
        #expect(environ.range(of: Data("SECITEM_PASSPHRASE=".utf8)) == nil)
        // The passphrase was still used: the store opens with it.
        try child.send(Data("pw\n".utf8))
        let added = try child.finish()
        #expect(added.status == 0, "\(added.stderr)")
        let find = try cli.run(["find-generic-password", "-a", "a", "-s", "s", "-w"], environment: ["SECITEM_PASSPHRASE": marker, "SECITEM_KEY_SOURCE": "passphrase"])
        #expect(find.stdout == "pw\n", "\(find.stderr)")
        let wrong = try cli.run(["find-generic-password", "-a", "a", "-s", "s", "-w"], environment: ["SECITEM_PASSPHRASE": "other", "SECITEM_KEY_SOURCE": "passphrase"])
        #expect(wrong.status == 51)

        let diagnose = try cli.run(["diagnose"])
        #expect(diagnose.stdout.contains("process: core dumps off (dumpable 0, RLIMIT_CORE 0)"), "\(diagnose.stdout)")
    }

    @Test("the PostgreSQL URL (and the password in it) is wiped from /proc/PID/environ, and still used (issue 27, 13)")
    func postgresqlURLWiped() throws {
        let cli = try CLI(backend: "postgresql", bus: false)
        defer { cli.remove() }
        let marker = "pg-url-secret-\(UUID().uuidString)"
        let host = "/nonexistent-\(UUID().uuidString.prefix(8))"
        let url = "host=\(host) dbname=secitem user=secitem password=\(marker)"
        var env = cli.environment
        env["SECITEM_POSTGRESQL_URL"] = url
        env["SECITEM_PASSPHRASE"] = "fleet-passphrase"
        let child = try ChildProcess(CLI.executable.path, ["add-generic-password", "-a", "a", "-s", "s", "-w", "-"], environment: env)
        let pid = child.processIdentifier
        var environ = Data()
        _ = Wait.holds(within: .seconds(20)) {
            let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
            environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
            return cmdline.range(of: Data("add-generic-password".utf8)) != nil && !environ.isEmpty
                && environ.range(of: Data(marker.utf8)) == nil
        }
        #expect(!environ.isEmpty)
        #expect(environ.range(of: Data(marker.utf8)) == nil, "the URL's password is still in /proc/\(pid)/environ")
        #expect(environ.range(of: Data("SECITEM_POSTGRESQL_URL=".utf8)) == nil)
        try child.send(Data("pw\n".utf8))
        let added = try child.finish()
        // The URL was still used: the connection went to its host (which does not exist).
        #expect(added.status == 53, "\(added.stderr)")
        #expect(added.stderr.contains(host), "\(added.stderr)")
        #expect(!added.stderr.contains(marker))
        let diagnose = try cli.run(["diagnose"], environment: ["SECITEM_POSTGRESQL_URL": url, "SECITEM_PASSPHRASE": "p"])
        #expect(diagnose.stdout.contains(host), "\(diagnose.stdout)")
        #expect(!diagnose.stdout.contains(marker) && !diagnose.stderr.contains(marker))
    }

    @Test("a signal at the password prompt restores the terminal's echo", arguments: ["INT", "TERM", "HUP"])
    func promptSignal(signal: String) throws {
        let cli = try CLI(backend: "file", bus: false)
        defer { cli.remove() }
        // script(1) gives the shell a pseudo-terminal; the command reads its prompt from it,
        // the shell checks the terminal's echo flag during the prompt and after the signal.
        let dir = cli.root.path
        let shell = """
            echo_state() { stty -a < /dev/tty | tr ' ;' '\\n\\n' | grep -x -e echo -e -echo; }
            echo_state > '\(dir)/before'
            '\(CLI.executable.path)' add-generic-password -a t -s tty -w < /dev/tty 2> '\(dir)/err' &
            pid=$!
            i=0
            # The prompt shows once echo is off and the handlers are in place: wait for it (20 s at most).
            while ! grep -q 'password data' '\(dir)/err' && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
            echo_state > '\(dir)/during'
            kill -\(signal) $pid
            wait $pid
            echo $? > '\(dir)/status'
            echo_state > '\(dir)/after'
            """
        try Data(shell.utf8).write(to: cli.root.appendingPathComponent("prompt.sh"))
        // Its input is held open until it has finished: an end of input would reach the prompt as ^D.
        let child = try ChildProcess("/usr/bin/script", ["-qec", "sh \(dir)/prompt.sh", "/dev/null"], environment: cli.environment)
        try Wait.until("the prompt script to end", timeout: .seconds(60)) { !child.isRunning }
        _ = try? child.finish(timeout: .seconds(1))
        func read(_ name: String) -> String {
            ((try? String(contentsOfFile: "\(dir)/\(name)", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(read("before") == "echo")
        #expect(read("during") == "-echo", "the prompt did not turn echo off: \(read("err"))")
        let signalNumber = ["INT": SIGINT, "TERM": SIGTERM, "HUP": SIGHUP][signal]!
        #expect(read("status") == "\(128 + signalNumber)", "the command did not end by the signal")
        #expect(read("after") == "echo", "echo is still off after SIG\(signal)")
        #expect(try cli.run(["find-generic-password", "-a", "t", "-s", "tty"]).status == 44)
    }
}
