public import SecItem
public import Foundation

/// Git credentials kept as keychain internet passwords, exactly as
/// `git-credential-osxkeychain` keeps them on a Mac.
///
/// | git | internet password attribute |
/// |---|---|
/// | `protocol` | `kSecAttrProtocol`: `https` → `htps`, `http`, `ftp` → `ftp `, `ftps`, `imap`, `imaps` → `imps`, `smtp` (osxkeychain's set), plus `smtps`-less extras listed in ``protocolCodes`` |
/// | `host` | `kSecAttrServer` (without the port) |
/// | the port in `host` | `kSecAttrPort` (absent: 0) |
/// | `path` | `kSecAttrPath` (absent: empty) |
/// | `username` | `kSecAttrAccount` |
/// | — | `kSecAttrAuthenticationType` = `kSecAttrAuthenticationTypeDefault` |
/// | `password` | the data: the password, then `\npassword_expiry_utc=N` and `\noauth_refresh_token=T` when git gave them |
///
/// So `secitem find-internet-password -s github.com -w` prints what git stored, and
/// an export from one machine means the same on another (and on a Mac).
///
/// Matching follows git's own rule (`credential_match`): a field git leaves out
/// matches anything, a field it gives must be equal. The port is part of the
/// host in git's model, so `host=example.com` does not match a credential stored
/// for `example.com:8443` (osxkeychain would return it; git-credential-store would not).
public struct GitCredentialStore: Sendable {
    /// The keychain the credentials live in.
    public let client: SecItemClient
    /// The clock that decides whether a credential has expired.
    public let now: @Sendable () -> Date
    /// Which items other tools stored (the Secret Service's group `org.secitem.foreign`,
    /// when the client is entitled to it) the helper returns and erases.
    public let foreignItems: ForeignItems

    /// Which Secret Service items that other tools stored count as git's credentials.
    public enum ForeignItems: String, Sendable, Equatable, CaseIterable {
        /// git-credential-libsecret's own: schema `org.git.Password` (git 2.43 and later),
        /// or, as git 2.42 and earlier stored them, `org.gnome.keyring.NetworkPassword`
        /// labelled `Git: …` with no domain. GNOME's other network passwords (GVfs
        /// mounts, password dialogs) are neither returned nor erased. The default.
        case git
        /// Every internet password other tools stored, GNOME's network passwords too; those
        /// that are not git's are erased only when git sends their password.
        case all
        /// None: only the credentials this helper stored.
        case none
    }

    /// Who stored a found item.
    enum Owner { case secItem, git, other }

    public init(client: SecItemClient, now: @escaping @Sendable () -> Date = { Date() }, foreignItems: ForeignItems = .git) {
        self.client = client
        self.now = now
        self.foreignItems = foreignItems
    }

    /// The access group of items other Secret Service clients stored.
    static let foreignGroup = "org.secitem.foreign"

    /// Who stored `item` (its attributes as returned): this helper (any SecItem group),
    /// git-credential-libsecret, or another tool.
    static func owner(_ item: [String: Any]) -> Owner {
        guard item[kSecAttrAccessGroup as String] as? String == foreignGroup else { return .secItem }
        switch item[kSecAttrDescription as String] as? String {
        case "org.git.Password"?:
            return .git
        case "org.gnome.keyring.NetworkPassword"?:
            // git-credential-libsecret before git 2.43 stored its items under GNOME's schema,
            // labelled "Git: <url>", without the domain GNOME's own dialogs and GVfs may set.
            let label = item[kSecAttrLabel as String] as? String ?? ""
            let domain = item[kSecAttrSecurityDomain as String] as? String ?? ""
            return label.hasPrefix("Git: ") && domain.isEmpty ? .git : .other
        default:
            return .other
        }
    }

    /// Whether `get` may return an item of `owner`.
    func returns(_ owner: Owner) -> Bool {
        switch owner {
        case .secItem: return true
        case .git: return foreignItems != .none
        case .other: return foreignItems == .all
        }
    }

    /// The `protocol` values stored, and their `kSecAttrProtocol` codes. The first
    /// seven are the ones `git-credential-osxkeychain` stores; a credential for any
    /// other protocol is neither stored nor looked up (the helper answers nothing),
    /// as osxkeychain does.
    public static let protocolCodes: [String: String] = [
        "https": kSecAttrProtocolHTTPS as String, "http": kSecAttrProtocolHTTP as String,
        "ftp": kSecAttrProtocolFTP as String, "ftps": kSecAttrProtocolFTPS as String,
        "imap": kSecAttrProtocolIMAP as String, "imaps": kSecAttrProtocolIMAPS as String,
        "smtp": kSecAttrProtocolSMTP as String,
        "pop3": kSecAttrProtocolPOP3 as String, "pop3s": kSecAttrProtocolPOP3S as String,
        "ldap": kSecAttrProtocolLDAP as String, "ldaps": kSecAttrProtocolLDAPS as String,
        "nntp": kSecAttrProtocolNNTP as String, "nntps": kSecAttrProtocolNNTPS as String,
        "smb": kSecAttrProtocolSMB as String, "socks": kSecAttrProtocolSOCKS as String,
    ]

    /// The state value this helper leaves with an answer (when git announced
    /// `capability[]=state`), so that the `store` git sends after using the answer
    /// is skipped: the credential is already here.
    public static let seenState = "secitem:seen=1"

    // MARK: The three actions

    /// `get`: the newest stored credential matching `query` that has not expired.
    ///
    /// - Returns: The credential (username, password, expiry, refresh token), or `nil`
    ///   when none matches, the protocol is not one that is stored, or the query
    ///   has no host.
    /// - Throws: ``SecItemError`` when the keychain cannot be read (locked, no key…).
    public func get(_ query: GitCredential) throws(SecItemError) -> GitCredential? {
        guard let attributes = matchAttributes(query) else { return nil }
        var search = attributes
        search[kSecMatchLimit as String] = kSecMatchLimitAll
        search[kSecReturnAttributes as String] = true
        search[kSecReturnData as String] = true
        let found: [[String: Any]]
        do throws(SecItemError) {
            found = try client.copyMatchingItems(search) as? [[String: Any]] ?? []
        } catch SecItemError.itemNotFound {
            return nil
        }
        let nowSeconds = Self.clockSeconds(now())
        let candidates = found.compactMap { item -> (Date, GitCredential)? in
            guard returns(Self.owner(item)) else { return nil }
            guard let data = item[kSecValueData as String] as? Data, let stored = Self.decodeData(data) else { return nil }
            if let expiry = stored.passwordExpiryUTC, expiry <= nowSeconds { return nil }
            var answer = stored
            answer.username = item[kSecAttrAccount as String] as? String ?? ""
            return (item[kSecAttrModificationDate as String] as? Date ?? .distantPast, answer)
        }
        return candidates.max { $0.0 < $1.0 }?.1
    }

    /// The outcome of ``store(_:timeout:)``.
    public enum StoreOutcome: Sendable, Equatable {
        /// Added as a new item.
        case added
        /// An item with the same protocol, host, port, path and username existed; its data was replaced.
        case replaced
        /// Nothing stored, and why (an incomplete credential, a protocol not stored, the helper's own answer).
        case skipped(String)
    }

    /// `store`: adds the credential, or replaces the password of the one with the
    /// same protocol, host, port, path and username, in one keychain call each way.
    ///
    /// - Parameter timeout: When given, the credential also expires this many seconds from
    ///   now: 1 to ``GitCredentialCommand/maximumTimeout``.
    /// - Throws: `errSecParam` for a timeout outside that range (nothing is stored).
    public func store(_ credential: GitCredential, timeout: Int? = nil) throws(SecItemError) -> StoreOutcome {
        if let timeout, !(1...GitCredentialCommand.maximumTimeout).contains(timeout) {
            throw SecItemError(
                errSecParam, "the timeout must be 1 to \(GitCredentialCommand.maximumTimeout) seconds, not \(timeout)")
        }
        if credential.state.contains(Self.seenState) { return .skipped("the credential came from this helper") }
        guard let scheme = credential.scheme, let code = Self.protocolCodes[scheme] else {
            return .skipped("the protocol \(credential.scheme.map { "'\($0)'" } ?? "(none)") is not stored")
        }
        guard let host = credential.host, let username = credential.username, let password = credential.password else {
            return .skipped("git gave no host, username or password")
        }
        var stored = credential
        if let timeout {
            // Saturating: a clock set absurdly far ahead cannot trap either.
            let (sum, overflow) = Self.clockSeconds(now()).addingReportingOverflow(Int64(timeout))
            let limit = overflow ? Int64.max : sum
            stored.passwordExpiryUTC = min(credential.passwordExpiryUTC ?? limit, limit)
        }
        guard !password.contains(0x0A) else {
            throw SecItemError(errSecParam, "a password holding a newline cannot be stored for git")
        }
        let key: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: host,
            kSecAttrProtocol as String: code,
            kSecAttrPort as String: credential.port ?? 0,
            kSecAttrPath as String: credential.path ?? "",
            kSecAttrAccount as String: username,
            kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeDefault,
            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
        ]
        let data = Self.encodeData(stored)
        // Add, else replace the data of the existing item; retry once each way when
        // another process adds or removes the same item in between.
        for _ in 0..<3 {
            var item = key
            item[kSecValueData as String] = data
            do throws(SecItemError) {
                try client.addItem(item)
                return .added
            } catch SecItemError.duplicateItem {
                do throws(SecItemError) {
                    try client.updateItems(key, [kSecValueData as String: data])
                    return .replaced
                } catch SecItemError.itemNotFound {
                    continue
                }
            }
        }
        throw SecItemError(errSecDuplicateItem, "the credential kept changing under the helper; try again")
    }

    /// `erase`: deletes every credential matching `query` (protocol and host are
    /// required; a blank query erases nothing) and, when git sends the rejected
    /// password, only those holding that password.
    ///
    /// That is git's protocol (`credential_match`, and git-credential-libsecret since
    /// git 2.43): without a password every match goes (`git credential reject` of a URL,
    /// t0303's "helper can forget host/user"). It applies to this helper's credentials
    /// and git-credential-libsecret's; an item another tool stored (with
    /// ``ForeignItems/all`` only) is erased only when git sends its password.
    ///
    /// - Returns: How many were deleted.
    public func erase(_ query: GitCredential) throws(SecItemError) -> Int {
        guard query.scheme != nil, query.host != nil, var search = matchAttributes(query) else { return 0 }
        search[kSecMatchLimit as String] = kSecMatchLimitAll
        search[kSecReturnAttributes as String] = true  // so each match is a dictionary
        search[kSecReturnPersistentRef as String] = true
        if query.password != nil { search[kSecReturnData as String] = true }
        let found: [[String: Any]]
        do throws(SecItemError) {
            found = try client.copyMatchingItems(search) as? [[String: Any]] ?? []
        } catch SecItemError.itemNotFound {
            return 0
        }
        var deleted = 0
        for item in found {
            guard let ref = item[kSecValuePersistentRef as String] as? Data else { continue }
            let owner = Self.owner(item)
            guard returns(owner) else { continue }
            if owner == .other && query.password == nil { continue }
            if let password = query.password {
                guard let data = item[kSecValueData as String] as? Data, Self.passwordLine(data) == password else { continue }
            }
            do throws(SecItemError) {
                deleted += try client.deleteItems([kSecClass as String: kSecClassInternetPassword, kSecValuePersistentRef as String: ref])
            } catch SecItemError.itemNotFound {
                continue  // deleted by someone else meanwhile
            }
        }
        return deleted
    }

    // MARK: The mapping

    /// The query attributes for git's fields; `nil` when the protocol is not one that is stored.
    func matchAttributes(_ query: GitCredential) -> [String: Any]? {
        guard let scheme = query.scheme, let code = Self.protocolCodes[scheme], let host = query.host else { return nil }
        var attributes: [String: Any] = [
            kSecClass as String: kSecClassInternetPassword,
            kSecAttrServer as String: host,
            kSecAttrProtocol as String: code,
            kSecAttrPort as String: query.port ?? 0,
            kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeDefault,
            kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
        ]
        if let path = query.path { attributes[kSecAttrPath as String] = path }
        if let username = query.username { attributes[kSecAttrAccount as String] = username }
        return attributes
    }

    /// The item's data: the password, then the metadata lines osxkeychain appends.
    public static func encodeData(_ credential: GitCredential) -> Data {
        var data = credential.password ?? Data()
        if let expiry = credential.passwordExpiryUTC {
            data.append(contentsOf: Array("\npassword_expiry_utc=\(expiry)".utf8))
        }
        if let token = credential.oauthRefreshToken {
            data.append(contentsOf: Array("\noauth_refresh_token=".utf8))
            data.append(token)
        }
        return data
    }

    /// Reads an item's data back: the first line is the password, each later line
    /// `password_expiry_utc=` or `oauth_refresh_token=`. `nil` when a later line is
    /// anything else (a password with a newline, which git's protocol cannot carry).
    public static func decodeData(_ data: Data) -> GitCredential? {
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
        var credential = GitCredential(password: Data(lines[0]))
        for line in lines.dropFirst() {
            let text = String(decoding: line, as: UTF8.self)
            if text.hasPrefix("password_expiry_utc="), let seconds = Int64(text.dropFirst(20)) {
                credential.passwordExpiryUTC = seconds
            } else if text.hasPrefix("oauth_refresh_token=") {
                credential.oauthRefreshToken = Data(line.dropFirst(20))
            } else {
                return nil
            }
        }
        return credential
    }

    /// Whole seconds since 1970 of `date`, clamped to Int64 (`Int64(Double)` traps outside it).
    static func clockSeconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite else { return seconds > 0 ? .max : .min }
        if seconds >= 9.2e18 { return .max }
        if seconds <= -9.2e18 { return .min }
        return Int64(seconds)
    }

    /// The password part of an item's data (its first line).
    static func passwordLine(_ data: Data) -> Data {
        guard let newline = data.firstIndex(of: 0x0A) else { return data }
        return Data(data[..<newline])
    }
}
