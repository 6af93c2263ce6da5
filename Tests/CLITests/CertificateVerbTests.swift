// Issue 25: secitem import of PEM, DER and PKCS #12 files, find-certificate, find-identity,
// and export --type certs|pubKeys, checked against the openssl command line.
import Foundation
import SecItemTestSupport
import Testing

@Suite("secitem certificate and key verbs")
struct CertificateVerbTests {
    /// openssl with `arguments` in `dir`; its standard output.
    @discardableResult
    func openssl(_ arguments: [String], in dir: URL) throws -> Data {
        let out = try ChildProcess.run("/bin/sh", ["-c", "cd \"$0\" && exec openssl \"$@\"", dir.path] + arguments)
        guard out.status == 0 else { throw TestSetupError("openssl \(arguments[0]): \(out.stderr)") }
        return out.stdoutData
    }

    /// A CA, an RSA client certificate it signed, its key, and a PKCS #12 file of them.
    func pki(_ dir: URL) throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                     "-subj", "/CN=Test CA", "-days", "2"], in: dir)
        try openssl(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "c.key", "-out", "c.csr",
                     "-subj", "/CN=alice/emailAddress=alice@example.com"], in: dir)
        try openssl(["x509", "-req", "-in", "c.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "5", "-days", "2", "-out", "c.pem"], in: dir)
        try openssl(["pkcs12", "-export", "-inkey", "c.key", "-in", "c.pem", "-passout", "pass:p12 pass", "-out", "c.p12"], in: dir)
        try openssl(["x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca.der"], in: dir)
    }

    @Test("import PKCS #12 and DER, find-certificate, find-identity, export certs and public keys", arguments: Store.allCases)
    func lifecycle(store: Store) throws {
        let cli = try store.cli()
        defer { cli.remove() }
        let dir = cli.root.appendingPathComponent("pki")
        try pki(dir)
        let p12 = dir.appendingPathComponent("c.p12").path
        // A wrong passphrase imports nothing (status 51).
        let wrong = try cli.run(["import", p12], environment: ["SECITEM_EXPORT_PASSPHRASE": "nope"])
        #expect(wrong.status == 51, "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("nope"))
        #expect(try cli.run(["find-identity"]).stdout.contains("0 identities found"))
        let imported = try cli.run(["import", p12], environment: ["SECITEM_EXPORT_PASSPHRASE": "p12 pass"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("imported 1 identity"))
        let again = try cli.run(["import", p12], environment: ["SECITEM_EXPORT_PASSPHRASE": "p12 pass"])
        #expect(again.status == 45, "\(again.stderr)")
        let ca = try cli.run(["import", dir.appendingPathComponent("ca.der").path, "-l", "the CA"])
        #expect(ca.status == 0, "\(ca.stderr)")
        #expect(ca.stderr.contains("imported 1 certificate"))
        // find-certificate: by name, by email, PEM equal to openssl's, hashes equal to openssl's.
        let byName = try cli.run(["find-certificate", "-c", "alice", "-p"])
        #expect(byName.status == 0)
        let pem = String(decoding: try openssl(["x509", "-in", "c.pem"], in: dir), as: UTF8.self)
        #expect(byName.stdout == pem)
        #expect(try cli.run(["find-certificate", "-e", "ALICE@example.com"]).stdout.contains("\"labl\"<blob>=\"alice\""))
        #expect(try cli.run(["find-certificate", "-c", "the CA"]).stdout.contains("\"slnr\"<blob>=0x"))
        #expect(try cli.run(["find-certificate", "-c", "nobody"]).status == 44)
        let hashes = try cli.run(["find-certificate", "-a", "-Z"]).stdout
        for file in ["c.pem", "ca.pem"] {
            let fingerprint = String(decoding: try openssl(["x509", "-in", file, "-noout", "-fingerprint", "-sha1"], in: dir), as: UTF8.self)
            let hex = fingerprint.split(separator: "=").last!.replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(hashes.contains("SHA-1 hash: \(hex)"), "\(file)")
        }
        let identities = try cli.run(["find-identity", "-v"])
        #expect(identities.stdout.contains("\"alice\""))
        #expect(identities.stdout.contains("1 valid identities found"))
        // export: certificates as a PEM sequence; the public key as openssl prints it.
        let certs = try cli.run(["export", "-t", "certs"])
        #expect(certs.status == 0)
        #expect(certs.stdout.components(separatedBy: "BEGIN CERTIFICATE").count == 3)
        let keys = try cli.run(["export", "-t", "pubKeys"])
        let openPublic = String(decoding: try openssl(["pkey", "-in", "c.key", "-pubout"], in: dir), as: UTF8.self)
        #expect(keys.stdout == openPublic)
        let der = dir.appendingPathComponent("one.der").path
        #expect(try cli.run(["export", "-t", "certs", "-f", "x509", "-o", der]).status == 2, "two certificates are not one DER")
        #expect(try cli.run(["export", "-t", "secrets"]).status == 2)
    }

    @Test("import of garbage is refused with a clear status and changes nothing")
    func garbage() throws {
        let cli = try Store.file.cli()
        defer { cli.remove() }
        let file = cli.root.appendingPathComponent("junk.bin")
        try Data("-----BEGIN NOTHING-----\nAAAA\n-----END NOTHING-----\n".utf8).write(to: file)
        let pemJunk = try cli.run(["import", file.path])
        #expect(pemJunk.status != 0)
        try Data(repeating: 7, count: 300).write(to: file)
        let junk = try cli.run(["import", file.path], environment: ["SECITEM_EXPORT_PASSPHRASE": "x"])
        #expect(junk.status != 0)
        #expect(junk.stderr.contains("not a PEM, DER certificate, DER key or PKCS #12 file"))
        #expect(try cli.run(["find-certificate", "-a"]).status == 44)
    }
}
