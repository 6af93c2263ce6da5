import Foundation
import SecItemCore

/// Parsing of legacy plaintext secret files, for ``Keychain/migrateLegacyFile(at:into:accessGroup:removeFile:)``
/// (JSON object of objects, JSON array of entries, INI sections). Apps call that
/// migration, so the parser lives with it in the typed layer, not in the core.
enum LegacyFile {
    struct Entry {
        var service: String
        var account: String
        var secret: String
    }

    static func parse(_ data: Data) throws -> [Entry] {
        if let json = try? JSONSerialization.jsonObject(with: data) {
            return try parseJSON(json)
        }
        guard let text = String(bytes: data, encoding: .utf8) else {
            throw SecItemError(errSecDecode, "the legacy file is neither JSON nor UTF-8 INI text")
        }
        return try parseINI(text)
    }

    static func parseJSON(_ json: Any) throws -> [Entry] {
        let bad = SecItemError(errSecDecode, "the legacy JSON is not {service: {account: secret}} or [{service, account, secret}]")
        var out: [Entry] = []
        if let object = json as? [String: Any] {
            for service in object.keys.sorted() {
                guard let accounts = object[service] as? [String: Any] else { throw bad }
                for account in accounts.keys.sorted() {
                    guard let secret = accounts[account] as? String else { throw bad }
                    out.append(Entry(service: service, account: account, secret: secret))
                }
            }
        } else if let array = json as? [Any] {
            for element in array {
                guard let e = element as? [String: Any], let service = e["service"] as? String,
                    let account = e["account"] as? String,
                    let secret = (e["secret"] as? String) ?? (e["password"] as? String)
                else { throw bad }
                out.append(Entry(service: service, account: account, secret: secret))
            }
        } else {
            throw bad
        }
        return out
    }

    static func parseINI(_ text: String) throws -> [Entry] {
        var out: [Entry] = []
        var section: String?
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let section, let eq = line.firstIndex(of: "=") else {
                throw SecItemError(errSecDecode, "legacy INI line \(number + 1) is not `account = secret` inside a [service] section")
            }
            let account = line[..<eq].trimmingCharacters(in: .whitespaces)
            let secret = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            out.append(Entry(service: section, account: account, secret: secret))
        }
        return out
    }
}
