public import Foundation

/// Another program's Secret Service client (`secret-tool`, Python's `keyring`), run by a test
/// as a witness of what the provider stores.
///
/// KWallet (kwalletd5 5.103) fails a client's session now and then, in two ways
/// (docs/secret-service-mapping.md, "Providers"):
/// - it loses the session: in about 1 session in 100–250, the secret a client sends or reads
///   fails with "Can't find session …";
/// - it refuses a Diffie-Hellman public key shorter than 128 bytes ("Client public key size is
///   invalid"), which libsecret and Python's `secretstorage` send 1 time in 256.
///
/// The backend opens a new session and runs the operation again; `secret-tool` and
/// `secretstorage` do not, so a test using them as witnesses would fail for KWallet's fault,
/// not the backend's. A witness that failed with exactly one of those messages runs again, up
/// to `attempts` times in all, saying so on standard error; any other outcome (a success, a
/// miss, any other error) is returned as is. Every operation the tests run this way is
/// idempotent (`store` and `set_password` replace; `clear`, `delete_password` and the reads
/// only read or remove).
public enum SecretServiceWitness {
    /// KWallet's messages for the two session failures above.
    public static let providerSessionFailures = ["Can't find session", "Client public key size is invalid"]

    /// Runs `executable` to completion as `ChildProcess.run` does, again when KWallet failed its
    /// session.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
        timeout: Duration = .seconds(60), attempts: Int = 3
    ) throws -> ProcessOutput {
        var attempt = 1
        while true {
            let output = try ChildProcess.run(executable, arguments, environment: environment, stdin: stdin, timeout: timeout)
            guard output.status != 0, attempt < attempts,
                let failure = providerSessionFailures.first(where: { output.stderr.contains($0) })
            else { return output }
            FileHandle.standardError.write(
                Data("SecretServiceWitness: \((executable as NSString).lastPathComponent) \(arguments.first ?? ""): \"\(failure)\" (attempt \(attempt) of \(attempts)); running it again\n".utf8))
            attempt += 1
        }
    }

    /// `secret-tool` with `arguments`, again when KWallet failed its session.
    public static func secretTool(
        _ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil, timeout: Duration = .seconds(60)
    ) throws -> ProcessOutput {
        try run(try Executables.which("secret-tool"), arguments, environment: environment, stdin: stdin.map { Data($0.utf8) }, timeout: timeout)
    }
}
