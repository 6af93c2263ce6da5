import Foundation
import SecItem
import SecItemCore

/// Keys, certificates and identities on the command line, as macOS `security` has them:
/// find-certificate, find-identity, `import FILE` (PEM, DER, PKCS #12) and
/// `export --type certs|pubKeys` (issue 25; docs/keys.md).
enum CertificateVerbs {
    static let all: [Verb] = [findCertificate, findIdentity]

    static let groupOption = OptionSpec(
        "group", short: "G", long: "access-group", valueName: "group",
        help: "Only this access group (import: the group the objects go to).")

    /// Every certificate item, optionally in one group, as (certificate, attributes).
    static func certificates(_ client: SecItemClient, group: String?) throws(CommandError) -> [(SecCertificate, [String: Any])] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecMatchLimit as String: kSecMatchLimitAll,
            kSecReturnRef as String: true, kSecReturnAttributes as String: true,
        ]
        if let group { query[kSecAttrAccessGroup as String] = group }
        do throws(SecItemError) {
            let found = try client.copyMatchingItems(query) as? [[String: Any]] ?? []
            return found.compactMap { row in (row[kSecValueRef as String] as? SecCertificate).map { ($0, row) } }
        } catch SecItemError.itemNotFound {
            return []
        } catch {
            throw CommandError(error, context: "cannot search the certificates")
        }
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02X", $0) }.joined() }

    static let findCertificate = Verb(
        "find-certificate", summary: "Find certificates by common name or email address and print them.",
        synopsis: "[-a] [-c name] [-e email] [-m] [-p] [-Z] [-G group]",
        discussion: """
            As macOS security find-certificate: without -a, the first match only; -p prints PEM, -Z the
            SHA-1 (and SHA-256) fingerprint, -m the email addresses; otherwise the certificate's label,
            issuer and serial number. Exit status 44 when none matches.
            """,
        options: [
            OptionSpec("all", short: "a", .flag, help: "Every match, not only the first."),
            OptionSpec("name", short: "c", valueName: "name", help: "Match certificates whose subject summary or label contains this."),
            OptionSpec("email", short: "e", valueName: "email", help: "Match certificates with this email address."),
            OptionSpec("showEmail", short: "m", .flag, help: "Print the email addresses."),
            OptionSpec("pem", short: "p", .flag, help: "Print the certificates in PEM."),
            OptionSpec("hash", short: "Z", .flag, help: "Print the SHA-1 hash of each certificate."),
            groupOption,
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        let args = invocation.arguments
        let client = try invocation.client()
        var matches = try certificates(client, group: args.value("group")).filter { certificate, attributes in
            if let name = args.value("name") {
                let label = attributes[kSecAttrLabel as String] as? String ?? ""
                guard KeyFiles.summary(certificate).contains(name) || label.contains(name) else { return false }
            }
            if let email = args.value("email") {
                guard KeyFiles.emails(certificate).contains(where: { $0.caseInsensitiveCompare(email) == .orderedSame }) else { return false }
            }
            return true
        }
        guard !matches.isEmpty else {
            throw CommandError(SecItemError(errSecItemNotFound, "no certificate matches"), context: "find-certificate")
        }
        if !args.has("all") { matches = [matches[0]] }
        var out = ""
        for (certificate, attributes) in matches {
            let der = SecCertificateCopyData(certificate) as Data
            if args.has("hash") {
                out += "SHA-1 hash: \(hex(KeyFiles.sha1(der) ?? Data()))\n"
            }
            if args.has("showEmail") {
                out += "email addresses: \(KeyFiles.emails(certificate).joined(separator: ", "))\n"
            }
            if args.has("pem") {
                out += KeyFiles.pem("CERTIFICATE", der)
            } else if !args.has("hash") && !args.has("showEmail") {
                let serial = attributes[kSecAttrSerialNumber as String] as? Data ?? Data()
                out += "keychain: \"\(client.backend.kind)\"\n"
                out += "class: \"cert\"\n"
                out += "attributes:\n"
                out += "    \"labl\"<blob>=\"\(attributes[kSecAttrLabel as String] as? String ?? "")\"\n"
                out += "    \"agrp\"<blob>=\"\(attributes[kSecAttrAccessGroup as String] as? String ?? "")\"\n"
                out += "    \"slnr\"<blob>=0x\(hex(serial))\n"
                out += "    \"summary\"=\"\(KeyFiles.summary(certificate))\"\n"
            }
        }
        Console.write(out)
    }

    static let findIdentity = Verb(
        "find-identity", summary: "List the identities: certificates whose private key is in the keychain.",
        synopsis: "[-v] [-G group]",
        discussion: """
            As macOS security find-identity: each identity's SHA-1 certificate hash and subject summary,
            then the count. -v is accepted (no trust evaluation on Linux: every identity is listed as valid).
            """,
        options: [
            OptionSpec("valid", short: "v", .flag, help: "Only valid identities (all of them here: no trust policy)."),
            groupOption,
        ]
    ) { (invocation: Invocation) throws(CommandError) in
        let client = try invocation.client()
        var query: [String: Any] = [
            kSecClass as String: kSecClassIdentity, kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true,
        ]
        if let group = invocation.arguments.value("group") { query[kSecAttrAccessGroup as String] = group }
        var identities: [SecIdentity] = []
        do throws(SecItemError) {
            identities = try client.copyMatchingItems(query) as? [SecIdentity] ?? []
        } catch SecItemError.itemNotFound {
            identities = []
        } catch {
            throw CommandError(error, context: "cannot search the identities")
        }
        var out = ""
        for (index, identity) in identities.enumerated() {
            var certificate: SecCertificate?
            SecIdentityCopyCertificate(identity, &certificate)
            guard let certificate else { continue }
            let hash = hex(KeyFiles.sha1(SecCertificateCopyData(certificate) as Data) ?? Data())
            out += "  \(index + 1)) \(hash) \"\(KeyFiles.summary(certificate))\"\n"
        }
        let valid = invocation.arguments.has("valid") ? "valid identities" : "identities"
        out += "     \(identities.count) \(valid) found\n"
        Console.write(out)
    }

    /// `secitem import FILE`: every object of a PEM, DER or PKCS #12 file added with
    /// `kSecValueRef` (the PKCS #12 passphrase as for archives: SECITEM_EXPORT_PASSPHRASE,
    /// a prompt, or standard input).
    static func importFile(_ invocation: Invocation, _ path: String) throws(CommandError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CommandError(.failure, "cannot read \(path): \(error.localizedDescription)")
        }
        let objects: [KeyFileObject]
        do throws(SecItemError) {
            objects = try KeyFiles.read(data) { () throws(SecItemError) -> String in
                do throws(CommandError) {
                    return try TransferVerbs.passphrase(confirm: false).exposedString()
                } catch {
                    throw SecItemError(errSecParam, error.message)
                }
            }
        } catch {
            throw CommandError(error, context: "cannot import \(path)")
        }
        let client = try invocation.client()
        var counts: [String: Int] = [:]
        for object in objects {
            var add: [String: Any] = [kSecValueRef as String: object.reference]
            if let group = invocation.arguments.value("group") { add[kSecAttrAccessGroup as String] = group }
            if let label = invocation.arguments.value("label") { add[kSecAttrLabel as String] = label }
            do throws(SecItemError) {
                try client.addItem(add)
            } catch {
                throw CommandError(error, context: "cannot import \(path) into the \(client.backend.kind) keychain")
            }
            let name: String
            switch object {
            case .certificate: name = "certificate"
            case .key: name = "key"
            case .identity: name = "identity"
            }
            counts[name, default: 0] += 1
        }
        let summary = counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)\($0.value == 1 ? "" : "s")" }
        Console.error("imported \(summary.joined(separator: ", ")) into the \(client.backend.kind) keychain\n")
    }

    /// `secitem export --type certs|pubKeys`: PEM (pemseq) or, for one certificate, DER (x509).
    static func exportObjects(_ invocation: Invocation, type: String) throws(CommandError) {
        let args = invocation.arguments
        let format = args.value("format") ?? "pemseq"
        guard ["pemseq", "pem", "x509", "der"].contains(format) else {
            throw CommandError(.usage, "--format is pemseq or x509, not '\(format)'")
        }
        let client = try invocation.client()
        var ders: [(label: String, der: Data)] = []
        switch type {
        case "certs":
            ders = try certificates(client, group: args.value("group")).map { ("CERTIFICATE", SecCertificateCopyData($0.0) as Data) }
        case "pubKeys":
            var query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true,
            ]
            if let group = args.value("group") { query[kSecAttrAccessGroup as String] = group }
            var keys: [SecKey] = []
            do throws(SecItemError) {
                keys = try client.copyMatchingItems(query) as? [SecKey] ?? []
            } catch SecItemError.itemNotFound {
                keys = []
            } catch {
                throw CommandError(error, context: "cannot search the keys")
            }
            // A key pair stored as both halves is exported once.
            var seen = Set<Data>()
            for key in keys {
                guard let spki = KeyFiles.subjectPublicKeyInfo(key), seen.insert(spki).inserted else { continue }
                ders.append(("PUBLIC KEY", spki))
            }
        default:
            throw CommandError(.usage, "--type is certs or pubKeys (private keys and identities are exported with the archive export)")
        }
        guard !ders.isEmpty else { throw CommandError(SecItemError(errSecItemNotFound, "nothing to export"), context: "export") }
        let bytes: Data
        if format == "x509" || format == "der" {
            guard ders.count == 1 else { throw CommandError(.usage, "--format x509 writes one object; \(ders.count) match (use pemseq)") }
            bytes = ders[0].der
        } else {
            bytes = Data(ders.map { KeyFiles.pem($0.label, $0.der) }.joined().utf8)
        }
        if let output = args.value("output"), output != "-" {
            guard !FileManager.default.fileExists(atPath: output) else { throw CommandError(.usage, "\(output) exists; export does not overwrite") }
            guard FileManager.default.createFile(atPath: output, contents: bytes, attributes: [.posixPermissions: 0o644]) else {
                throw CommandError(.failure, "cannot write \(output)")
            }
            Console.error("exported \(ders.count) \(type == "certs" ? "certificates" : "public keys") to \(output)\n")
        } else {
            Console.writeData(bytes)
        }
    }
}
