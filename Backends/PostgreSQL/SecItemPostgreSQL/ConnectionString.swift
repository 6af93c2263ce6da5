internal import CSecItemLibpq
import Foundation
import SecItemCore

/// Reading a libpq connection string (URI or `key=value`) without ever echoing
/// its password.
enum ConnectionString {
    /// The options a connection string sets, by keyword, as libpq parses them;
    /// `nil` when libpq cannot parse it.
    static func options(_ connection: String) -> [String: String]? {
        guard (try? Libpq.load()) != nil else { return nil }
        var error: UnsafeMutablePointer<CChar>?
        guard let parsed = csecitem_PQconninfoParse(connection, &error) else {
            // libpq's message may quote the part it choked on, which may be the password.
            if let error { csecitem_PQfreemem(error) }
            return nil
        }
        defer { csecitem_PQconninfoFree(parsed) }
        var out: [String: String] = [:]
        var option = parsed
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { out[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return out
    }

    /// The strings to remove from any message: the password in the connection
    /// string (as given and percent-encoded) and `PGPASSWORD`.
    static func secrets(_ connection: String?, environment: [String: String]) -> [String] {
        var out: [String] = []
        if let connection, let password = options(connection)?["password"], !password.isEmpty {
            out.append(password)
            if let encoded = password.addingPercentEncoding(withAllowedCharacters: .alphanumerics), encoded != password {
                out.append(encoded)
            }
        }
        if let password = environment["PGPASSWORD"], !password.isEmpty { out.append(password) }
        // Longest first, so a password containing another is removed whole.
        return out.sorted { $0.count > $1.count }
    }

    /// A description of where a connection string points, without its password:
    /// `host=… port=… dbname=… user=…` and the TLS mode, or where libpq will look.
    static func redacted(_ connection: String?) -> String {
        guard let connection else { return "from the PG* environment" }
        guard let options = options(connection) else {
            return (try? Libpq.load()) == nil ? "(not shown: libpq is not installed)" : "(a connection string libpq cannot parse)"
        }
        let shown = ["host", "hostaddr", "port", "dbname", "user", "sslmode", "target_session_attrs", "service"]
        let parts = shown.compactMap { key in options[key].map { "\(key)=\($0)" } }
        let password = options["password"].map { _ in " password=(redacted)" } ?? ""
        return parts.isEmpty ? "(defaults from the PG* environment)\(password)" : parts.joined(separator: " ") + password
    }

    /// The keyword/value pairs for `PQconnectdbParams`: our defaults first, then
    /// `dbname` holding the connection string, which libpq expands and lets
    /// override them; whatever neither sets comes from the `PG*` environment.
    /// - Throws: `errSecNotAvailable` when libpq is not installed; `errSecParam` when
    ///   libpq cannot parse the connection string.
    static func parameters(_ connection: String?, connectTimeout: Duration, environment: [String: String])
        throws(SecItemError) -> [(String, String)]
    {
        try Libpq.load()
        var parameters: [(String, String)] = []
        let given = try connection.map { (c: String) throws(SecItemError) -> [String: String] in
            guard let options = options(c) else {
                throw SecItemError(
                    errSecParam,
                    "the PostgreSQL connection string is neither a valid postgresql:// URI nor key=value pairs "
                        + "(libpq could not parse it; its text is not repeated here as it may hold a password)")
            }
            return options
        } ?? [:]
        if given["connect_timeout"] == nil, (environment["PGCONNECT_TIMEOUT"] ?? "").isEmpty {
            let seconds = max(2, connectTimeout.components.seconds + (connectTimeout.components.attoseconds > 0 ? 1 : 0))
            parameters.append(("connect_timeout", String(seconds)))
        }
        if given["application_name"] == nil, (environment["PGAPPNAME"] ?? "").isEmpty {
            parameters.append(("application_name", "secitem"))
        }
        if let connection { parameters.append(("dbname", connection)) }
        return parameters
    }
}
