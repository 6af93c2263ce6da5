public import Foundation

/// One credential as git's credential helper protocol carries it (`git help credential`).
///
/// Git writes `key=value` lines to a helper's standard input, ending with a blank
/// line or end of input; the helper answers in the same form. ``parse(_:)`` reads
/// that input, ``encodeAnswer(capabilities:)`` writes an answer.
///
/// Secrets (the password, the OAuth refresh token, a pre-encoded credential)
/// never appear in `description`, `debugDescription` or a mirror.
public struct GitCredential: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// `protocol`: the URL scheme (`https`, `http`, `smtp`…).
    public var scheme: String?
    /// `host` without its port (`example.com`, `[::1]`).
    public var host: String?
    /// The port `host` carried after a colon, if any.
    public var port: Int?
    /// `path`: sent by git only with `credential.useHttpPath` (or for `cert:` URLs).
    public var path: String?
    /// `username`; an empty value is a username of its own (`username=`).
    public var username: String?
    /// `password`, byte for byte.
    public var password: Data?
    /// `password_expiry_utc`: when the password stops being valid, in seconds since 1970 UTC.
    public var passwordExpiryUTC: Int64?
    /// `oauth_refresh_token`.
    public var oauthRefreshToken: Data?
    /// `capability[]`: what git (or the helper) announces it understands.
    public var capabilities: [String] = []
    /// `state[]`: opaque values helpers left in an earlier answer.
    public var state: [String] = []
    /// `wwwauth[]`: the server's `WWW-Authenticate` headers (read, not used).
    public var wwwAuth: [String] = []
    /// `authtype`: the scheme of a pre-encoded ``credential`` (read, not stored).
    public var authType: String?
    /// `credential`: a pre-encoded credential (read, not stored).
    public var credential: Data?

    public init(
        scheme: String? = nil, host: String? = nil, port: Int? = nil, path: String? = nil, username: String? = nil,
        password: Data? = nil, passwordExpiryUTC: Int64? = nil, oauthRefreshToken: Data? = nil
    ) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.username = username
        self.password = password
        self.passwordExpiryUTC = passwordExpiryUTC
        self.oauthRefreshToken = oauthRefreshToken
    }

    /// `host` as git writes it: with `:port` when there is one.
    public var hostAndPort: String? {
        guard let host else { return nil }
        return port.map { "\(host):\($0)" } ?? host
    }

    /// The URL this credential is for, without user or password (`https://example.com:8443/repo.git`).
    public var url: String {
        var out = "\(scheme ?? "?")://\(hostAndPort ?? "")"
        if let path, !path.isEmpty { out += "/" + path }
        return out
    }

    public var description: String {
        var out = "GitCredential(\(url)"
        if let username { out += ", username: \(username.isEmpty ? "(empty)" : username)" }
        if password != nil { out += ", password: <redacted>" }
        if let passwordExpiryUTC { out += ", expires: \(passwordExpiryUTC)" }
        if oauthRefreshToken != nil { out += ", oauth_refresh_token: <redacted>" }
        if credential != nil { out += ", credential: <redacted>" }
        return out + ")"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["url": url, "username": username as Any], displayStyle: .struct)
    }
}

/// Why git's input was refused. Never holds a secret: a value is named by its key only.
public struct GitCredentialInputError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension GitCredential {
    /// The most a single line may hold (64 KiB): far above any real URL, username,
    /// password or token, and a bound on what a broken caller can make the helper keep.
    public static let maximumLineLength = 64 * 1024
    /// The most the whole input may hold (1 MiB).
    public static let maximumInputLength = 1024 * 1024

    /// Reads git's input: `key=value` lines up to a blank line or the end.
    ///
    /// As the protocol requires: unknown keys are ignored, a later line replaces an
    /// earlier one with the same key, `key[]=value` appends to a list and an empty
    /// `key[]=` empties it; a `\r` before the newline is dropped, as git's own
    /// reader does. Refused (nothing is done with such input): a line without `=`,
    /// a NUL byte, a line over ``maximumLineLength`` or input over
    /// ``maximumInputLength``, a `\r` inside `protocol`, `host`, `path` or
    /// `username` (git itself refuses to send those), text that is not UTF-8
    /// where an attribute is stored as text, and a `host` whose port is not 1-65535.
    public static func parse(_ input: some Collection<UInt8>) throws(GitCredentialInputError) -> GitCredential {
        guard input.count <= maximumInputLength else {
            throw GitCredentialInputError("the input is longer than \(maximumInputLength) bytes")
        }
        var credential = GitCredential()
        var line: [UInt8] = []
        line.reserveCapacity(256)
        var iterator = input.makeIterator()
        var lineNumber = 0
        while true {
            line.removeAll(keepingCapacity: true)
            var ended = false
            while let byte = iterator.next() {
                if byte == 0x0A { ended = true; break }
                line.append(byte)
                if line.count > maximumLineLength {
                    throw GitCredentialInputError("line \(lineNumber + 1) is longer than \(maximumLineLength) bytes")
                }
            }
            if line.last == 0x0D { line.removeLast() }
            if line.isEmpty { break }  // a blank line, or the end of the input
            lineNumber += 1
            try credential.take(line, lineNumber: lineNumber)
            if !ended { break }
        }
        return credential
    }

    private mutating func take(_ line: [UInt8], lineNumber: Int) throws(GitCredentialInputError) {
        guard !line.contains(0) else { throw GitCredentialInputError("line \(lineNumber) contains a NUL byte") }
        guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else {
            // Print the start of the line only when it cannot be a secret's continuation.
            throw GitCredentialInputError("line \(lineNumber) is not key=value")
        }
        let key = String(decoding: line[..<equals], as: UTF8.self)
        let raw = Array(line[(equals + 1)...])
        func text() throws(GitCredentialInputError) -> String {
            guard let value = String(validating: raw, as: UTF8.self) else {
                throw GitCredentialInputError("the value of '\(key)' is not UTF-8 text")
            }
            return value
        }
        func attribute() throws(GitCredentialInputError) -> String {
            let value = try text()
            guard !raw.contains(0x0D) else {
                throw GitCredentialInputError("the value of '\(key)' contains a carriage return")
            }
            return value
        }
        switch key {
        case "protocol": scheme = try attribute()
        case "host":
            let (name, port) = try Self.splitHost(try attribute())
            host = name
            self.port = port
        case "path": path = try attribute()
        case "username": username = try attribute()
        case "password": password = Data(raw)
        case "password_expiry_utc":
            let value = try text()
            guard let seconds = Int64(value), seconds >= 0 else {
                throw GitCredentialInputError("password_expiry_utc is not a number of seconds")
            }
            passwordExpiryUTC = seconds
        case "oauth_refresh_token": oauthRefreshToken = Data(raw)
        case "authtype": authType = try attribute()
        case "credential": credential = Data(raw)
        case "capability[]": Self.append(try text(), to: &capabilities)
        case "state[]": Self.append(try text(), to: &state)
        case "wwwauth[]": Self.append(try text(), to: &wwwAuth)
        default: break  // unknown attributes are ignored, as the protocol requires
        }
    }

    private static func append(_ value: String, to list: inout [String]) {
        if value.isEmpty { list.removeAll() } else { list.append(value) }
    }

    /// Splits `host[:port]` (`[v6]:port` for IPv6 literals) into the name and the port.
    static func splitHost(_ value: String) throws(GitCredentialInputError) -> (String, Int?) {
        var portText: Substring?
        var name = Substring(value)
        if value.hasPrefix("[") {
            if let close = value.firstIndex(of: "]") {
                let rest = value[value.index(after: close)...]
                name = value[...close]
                if rest.hasPrefix(":") { portText = rest.dropFirst() } else if !rest.isEmpty {
                    throw GitCredentialInputError("the host '\(value)' is not [address]:port")
                }
            }
        } else if let colon = value.lastIndex(of: ":") {
            name = value[..<colon]
            portText = value[value.index(after: colon)...]
        }
        guard let portText else { return (String(name), nil) }
        guard let port = Int(portText), (1...65535).contains(port), portText.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw GitCredentialInputError("the port in host '\(value)' is not a number from 1 to 65535")
        }
        return (String(name), port)
    }

    /// The answer to `get`: `username`, `password` and the password's metadata,
    /// each line `key=value\n`.
    ///
    /// - Parameter capabilities: Lines to add after the credential (`capability[]`, `state[]`).
    /// - Throws: when a value holds a newline or NUL, which the protocol cannot carry
    ///   (git itself dies on such a value); nothing is written then.
    public func encodeAnswer(extraLines: [(String, String)] = []) throws(GitCredentialInputError) -> Data {
        var out = Data()
        func line(_ key: String, _ value: some Collection<UInt8>) throws(GitCredentialInputError) {
            guard !value.contains(0x0A), !value.contains(0) else {
                throw GitCredentialInputError("the stored \(key) contains a newline or NUL, which git's protocol cannot carry")
            }
            out.append(contentsOf: Array(key.utf8))
            out.append(UInt8(ascii: "="))
            out.append(contentsOf: value)
            out.append(0x0A)
        }
        if let username { try line("username", Array(username.utf8)) }
        if let password { try line("password", password) }
        if let passwordExpiryUTC { try line("password_expiry_utc", Array(String(passwordExpiryUTC).utf8)) }
        if let oauthRefreshToken { try line("oauth_refresh_token", oauthRefreshToken) }
        for (key, value) in extraLines { try line(key, Array(value.utf8)) }
        return out
    }
}
