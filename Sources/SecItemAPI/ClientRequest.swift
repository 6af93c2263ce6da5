package import SecItemSecurity
package import SecItemModel
package import Foundation

/// How many items a search returns (`kSecMatchLimit`).
package enum MatchLimit: Sendable, Hashable {
    /// No `kSecMatchLimit`: one item, returned unwrapped.
    case unspecified
    /// A count: 1 returns one unwrapped item; 2 or more return an array.
    case count(Int)
    /// `kSecMatchLimitAll`: every match, as an array.
    case all

    /// The number to ask a backend for (`nil` = all).
    var fetchLimit: Int? {
        switch self {
        case .unspecified: return 1
        case .count(let n): return n
        case .all: return nil
        }
    }

    /// Whether the result is an array.
    var returnsArray: Bool {
        switch self {
        case .unspecified: return false
        case .count(let n): return n >= 2
        case .all: return true
        }
    }
}

/// Which `kSecReturn…` keys were set to true.
package struct ReturnFlags: Sendable, Hashable {
    /// `kSecReturnData`.
    package var data = false
    /// `kSecReturnAttributes`.
    package var attributes = false
    /// `kSecReturnRef`.
    package var ref = false
    /// `kSecReturnPersistentRef`.
    package var persistentRef = false

    var count: Int { (data ? 1 : 0) + (attributes ? 1 : 0) + (ref ? 1 : 0) + (persistentRef ? 1 : 0) }
}

/// Which call a dictionary or request belongs to; the rules differ per call (contract §4, §5).
package enum Role: Sendable {
    case add
    case search
    /// The search query of SecItemUpdate or SecItemDelete: kSecMatch…/kSecReturn…/
    /// kSecValueData are ignored (the Linux profile), kSecMatchCaseInsensitive honoured.
    case modifyQuery
    /// SecItemUpdate's attributesToUpdate.
    case changes
}

/// One call to ``SecItemClient`` in types (add, search, update, delete): what the
/// dictionary parser makes of a query dictionary, and what the typed layer (`Keychain`,
/// tools) builds directly, so that neither round-trips through `[String: Any]`.
///
/// Not to be confused with `ItemQuery` (SecItemModel): a client request is everything
/// the caller asked for — the item's data, what to return (`kSecReturn…`), how many
/// (`kSecMatchLimit`), whether to ask the user — and it never reaches a backend. The
/// client turns its search part into an `ItemQuery`, which is all a backend sees: which
/// items match.
///
/// The parser decides every errSecParam, errSecNoSuchAttr and errSecNoSuchClass
/// while building one. The checks that bind every request whoever built it —
/// entitlement to the access group, the size limits — are ``validate(_:entitlements:)``,
/// which ``SecItemClient``'s typed entry points run (the dictionary API goes
/// through them too); the access-control gate runs when data is released.
package struct ClientRequest: Sendable {
    package var itemClass: ItemClass?
    package var persistentRef: (ItemClass, UUID)?
    /// Attribute values, `agrp` and `sync` excluded.
    package var attributes: [String: AttributeValue] = [:]
    package var accessGroup: String?
    package var synchronizable: SynchronizableFilter?
    package var data: Data?
    package var limit: MatchLimit = .unspecified
    package var returns = ReturnFlags()
    package var caseInsensitive = false
    package var allowsInteraction = false
    /// `kSecUseAuthenticationUI` for items needing user presence (absent: allow, as on Apple).
    package var authenticationUI = AuthenticationUI.allow
    /// `kSecUseOperationPrompt`.
    package var operationPrompt: String?
    /// `kSecUseAuthenticationContext`: the `LAContext` whose authentication covers this read.
    package var authenticationContext: (any AuthenticationContext)?
    /// `kSecAttrAccessControl`, folded into `pdmn` and `accc` once every key is read.
    var accessControl: SecAccessControl?
    /// `kSecValueRef`: the object an add stores, or a search looks for.
    package var reference: ItemReference?

    package init() {}

    /// A request for items of `itemClass` in `accessGroup` (`nil`: the client's
    /// default group for an add, every entitled group for a search).
    package init(
        _ itemClass: ItemClass, accessGroup: String? = nil, synchronizable: SynchronizableFilter? = nil
    ) {
        self.itemClass = itemClass
        self.accessGroup = accessGroup
        self.synchronizable = synchronizable
    }

    /// Sets attribute `key` (not `agrp`/`sync`) from a string, stored exactly as the
    /// parser stores a `String` given for it (a numeric string for a number attribute
    /// becomes a number; an invalid `kSecAttrAccessible` value is refused).
    package mutating func set(_ key: String, _ value: String) throws(SecItemError) {
        attributes[key] = try Coercion.attributeValue(.string(value), key: key, kind: Schema.kind(of: key))
    }

    /// Sets attribute `key` (not `agrp`/`sync`) from an integer, stored as the parser stores an `Int`.
    package mutating func set(_ key: String, _ value: Int) throws(SecItemError) {
        attributes[key] = try Coercion.attributeValue(.integer(Int64(value)), key: key, kind: Schema.kind(of: key))
    }

    /// The checks every request passes whoever built it: the access group must be
    /// entitled (any role), and what is stored (an add's item, an update's changes)
    /// must be within ``ItemLimits``; a search for an oversized value simply finds nothing.
    package func validate(_ role: Role, entitlements: AccessGroups) throws(SecItemError) {
        if let group = accessGroup, !entitlements.permits(group) {
            throw SecItemError(
                errSecMissingEntitlement,
                "access group '\(group)' is not one this process is entitled to (its groups: \(entitlements.groups.joined(separator: ", ")); SECITEM_ACCESS_GROUPS lists them)")
        }
        guard role == .add || role == .changes else { return }
        if let data { try ItemLimits.checkData(data) }
        for (key, value) in attributes { try ItemLimits.checkAttribute(key, value) }
    }

    /// Parses a query dictionary for `role` (`itemClass`: the class of the query an
    /// update's changes apply to). The entitlement and size checks are not made here
    /// but by ``validate(_:entitlements:)``.
    package static func parse(
        _ dictionary: [String: Any],
        role: Role,
        itemClass fixedClass: ItemClass? = nil
    ) throws(SecItemError) -> ClientRequest {
        var parsed = ClientRequest()
        parsed.attributes = Dictionary(minimumCapacity: dictionary.count)

        // The class first, so the attribute set is known.
        if role == .changes {
            parsed.itemClass = fixedClass
        } else if let rawClass = classValue(in: dictionary) {
            guard case .string(let name) = RawValue(rawClass) else {
                throw SecItemError(errSecParam, "kSecClass must be a string such as kSecClassGenericPassword")
            }
            guard let cls = ItemClass(name: name) else {
                throw SecItemError(errSecNoSuchClass, "'\(name)' is not a keychain item class")
            }
            parsed.itemClass = cls
        }

        // Without kSecClass, a kSecValueRef object names the class (its attributes follow).
        if parsed.itemClass == nil, role != .changes, let object = dictionary[SecConstant.kSecValueRef],
            case .reference(let reference) = RawValue(object)
        {
            parsed.itemClass = reference.itemClass
        }

        // Keys in dictionary order (no sorting on the hot path); on a failure, the
        // keys again in sorted order, so that with several problems the same one is
        // reported every time.
        let classAndRef = (parsed.itemClass, parsed.persistentRef)
        do {
            for (key, value) in dictionary where key != SecConstant.kSecClass || role == .changes {
                try parsed.take(key: key, raw: RawValue(value), role: role)
            }
        } catch {
            parsed = ClientRequest()
            (parsed.itemClass, parsed.persistentRef) = classAndRef
            for key in dictionary.keys.sorted() where key != SecConstant.kSecClass || role == .changes {
                try parsed.take(key: key, raw: RawValue(dictionary[key]!), role: role)
            }
            throw error
        }

        if let access = parsed.accessControl {
            try parsed.foldAccessControl(access)
        }
        if let reference = parsed.reference {
            try parsed.apply(reference, role: role, classGiven: parsed.itemClass != nil)
        }
        if role != .changes, parsed.itemClass == nil, parsed.persistentRef == nil {
            throw SecItemError(errSecParam, "the query has no kSecClass")
        }
        if let (refClass, _) = parsed.persistentRef {
            let others = parsed.attributes.keys.count + (parsed.accessGroup == nil ? 0 : 1)
                + (parsed.synchronizable == nil ? 0 : 1)
            if others > 0 {
                throw SecItemError(errSecParam, "a query by kSecValuePersistentRef cannot also constrain attributes")
            }
            if parsed.itemClass == nil { parsed.itemClass = refClass }
        }
        return parsed
    }

    /// `dictionary["class"]`: for the few keys of a typical query, comparing them is
    /// cheaper than hashing one.
    private static func classValue(in dictionary: [String: Any]) -> Any? {
        guard dictionary.count <= 8 else { return dictionary[SecConstant.kSecClass] }
        return dictionary.keys.firstIndex { $0 == SecConstant.kSecClass }.map { dictionary.values[$0] }
    }

    private mutating func take(key: String, raw: RawValue, role: Role)
        throws(SecItemError)
    {
        // Attribute keys are the common case: test for them before the long switch.
        if let code = Schema.attributeCode(key), code != .dataProtectionKeychain {
            try takeAttribute(key: key, code: code, raw: raw, role: role)
            return
        }
        if role == .changes {
            if key == SecConstant.kSecValueData {
                guard case .data(let d) = raw else {
                    throw SecItemError(errSecParam, "kSecValueData must be Data, not \(raw.typeName)")
                }
                data = d
                return
            }
            throw SecItemError(errSecNoSuchAttr, "'\(key)' is not an attribute and cannot be updated")
        }
        // The cases are disjoint; the kSecReturn keys, the commonest in a search, come first.
        switch key {
        case SecConstant.kSecReturnData, SecConstant.kSecReturnAttributes, SecConstant.kSecReturnRef,
            SecConstant.kSecReturnPersistentRef:
            guard role == .add || role == .search else { return }
            guard let b = raw.asBool else {
                throw SecItemError(errSecParam, "\(key) must be a Bool, not \(raw.typeName)")
            }
            switch key {
            case SecConstant.kSecReturnData: returns.data = b
            case SecConstant.kSecReturnAttributes: returns.attributes = b
            case SecConstant.kSecReturnRef: returns.ref = b
            default: returns.persistentRef = b
            }
        case SecConstant.kSecUseDataProtectionKeychain:
            return  // kSecUseDataProtectionKeychain: accepted and ignored.
        case SecConstant.kSecValueData:
            switch role {
            case .add:
                guard case .data(let d) = raw else {
                    throw SecItemError(errSecParam, "kSecValueData must be Data, not \(raw.typeName)")
                }
                data = d
            default:
                return  // A search ignores kSecValueData.
            }
        case SecConstant.kSecValuePersistentRef:
            guard role != .add else {
                throw SecItemError(errSecParam, "kSecValuePersistentRef cannot be given to SecItemAdd")
            }
            guard case .data(let d) = raw, let ref = PersistentReference.decode(d) else {
                throw SecItemError(errSecParam, "kSecValuePersistentRef must be a 20-byte persistent reference")
            }
            persistentRef = ref
        case SecConstant.kSecValueRef:
            guard case .reference(let object) = raw else {
                throw SecItemError(errSecParam, "kSecValueRef must be a SecKey, SecCertificate or SecIdentity, not \(raw.typeName)")
            }
            guard role != .changes else { return }
            reference = object
        case _ where key.hasPrefix("v_"):
            throw SecItemError(errSecParam, "'\(key)' is not a kSecValue key")
        case _ where key.hasPrefix("r_"):
            guard role == .add || role == .search else { return }
            throw SecItemError(errSecParam, "'\(key)' is not a kSecReturn key")
        case SecConstant.kSecMatchCaseInsensitive:
            guard role != .add else { return }
            guard let b = raw.asBool else {
                throw SecItemError(errSecParam, "kSecMatchCaseInsensitive must be a Bool, not \(raw.typeName)")
            }
            caseInsensitive = b
        case SecConstant.kSecMatchLimit:
            guard role == .search else { return }
            switch raw {
            case .string(SecConstant.kSecMatchLimitOne): limit = .count(1)
            case .string(SecConstant.kSecMatchLimitAll): limit = .all
            case .integer(let n) where n >= 0: limit = .count(Int(clamping: n))
            case .double(let d) where d >= 0 && d == d.rounded():
                limit = .count(Int(exactly: d) ?? Int.max)
            default:
                throw SecItemError(
                    errSecParam, "kSecMatchLimit must be kSecMatchLimitOne, kSecMatchLimitAll or a count ≥ 0")
            }
        case SecConstant.kSecMatchItemList:
            guard role == .search else { return }
            throw SecItemError(errSecUnimplemented, "kSecMatchItemList is not implemented on Linux")
        case SecConstant.kSecMatchSearchList:
            guard role == .search else { return }
            throw SecItemError(errSecUnimplemented, "kSecMatchSearchList (macOS file keychains) is not implemented on Linux")
        case _ where key.hasPrefix("m_"):
            guard role == .search else { return }
            throw SecItemError(errSecParam, "'\(key)' is not a kSecMatch key this keychain supports")
        case SecConstant.kSecUseAuthenticationUI:
            switch raw {
            case .string(SecConstant.kSecUseAuthenticationUIAllow):
                allowsInteraction = true
                authenticationUI = .allow
            case .string(SecConstant.kSecUseAuthenticationUIFail):
                allowsInteraction = false
                authenticationUI = .fail
            case .string(SecConstant.kSecUseAuthenticationUISkip):
                allowsInteraction = false
                authenticationUI = .skip
            default:
                throw SecItemError(errSecParam, "kSecUseAuthenticationUI must be Allow, Fail or Skip")
            }
        case SecConstant.kSecUseOperationPrompt:
            guard case .string(let prompt) = raw else {
                throw SecItemError(errSecParam, "kSecUseOperationPrompt must be a String, not \(raw.typeName)")
            }
            operationPrompt = prompt
        case SecConstant.kSecUseNoAuthenticationUI:
            // Apple's deprecated spelling: true is kSecUseAuthenticationUIFail, false is …Allow.
            let noUI: Bool
            switch raw {
            case .bool(let b): noUI = b
            case .integer(let n) where n == 0 || n == 1: noUI = n == 1
            default:
                throw SecItemError(errSecParam, "kSecUseNoAuthenticationUI must be a Bool, not \(raw.typeName)")
            }
            allowsInteraction = !noUI
            authenticationUI = noUI ? .fail : .allow
        case SecConstant.kSecUseKeychain:
            throw SecItemError(errSecUnimplemented, "kSecUseKeychain (macOS file keychains) is not implemented on Linux")
        case SecConstant.kSecUseAuthenticationContext:
            guard case .authenticationContext(let context) = raw else {
                throw SecItemError(
                    errSecParam, "kSecUseAuthenticationContext must be an LAContext (import LocalAuthentication), not \(raw.typeName)")
            }
            authenticationContext = context
        case _ where key.hasPrefix("u_"):
            throw SecItemError(errSecParam, "'\(key)' is not a kSecUse key")
        default:
            throw SecItemError(errSecParam, "'\(key)' is not a keychain query key")
        }
    }

    /// An access-control object is its protection class (`pdmn`) and its flags (`accc`),
    /// in an add, a search and a change alike. A `kSecAttrAccessible` that says otherwise
    /// is errSecParam, as on Apple platforms.
    private mutating func foldAccessControl(_ access: SecAccessControl) throws(SecItemError) {
        if let given = attributes[SecConstant.kSecAttrAccessible], given != .string(access.accessibility) {
            throw SecItemError(
                errSecParam, "kSecAttrAccessible and the kSecAttrAccessControl object's protection differ")
        }
        attributes[SecConstant.kSecAttrAccessible] = .string(access.accessibility)
        attributes[SecConstant.kSecAttrAccessControl] = .number(Int64(bitPattern: UInt64(access.flags.rawValue)))
    }

    private mutating func takeAttribute(
        key: String, code: AttributeCode, raw: RawValue, role: Role
    ) throws(SecItemError) {
        guard let itemClass else {
            // Only a persistent-ref query has no class; attributes with it are errSecParam.
            throw SecItemError(errSecParam, "a query by kSecValuePersistentRef cannot also constrain attributes")
        }
        // One lookup answers both "is it an attribute of this class?" and "of what kind?".
        guard let kind = itemClass.attributeKind(of: code) else {
            throw SecItemError(errSecNoSuchAttr, "'\(key)' is not an attribute of class \(itemClass.rawValue)")
        }
        switch code {
        case .accessControl:
            guard case .accessControl(let access) = raw else {
                throw SecItemError(
                    errSecParam,
                    "kSecAttrAccessControl must be a SecAccessControl (SecAccessControlCreateWithFlags), not \(raw.typeName)")
            }
            accessControl = access
        case .accessGroup:
            guard case .string(let group) = try Coercion.attributeValue(raw, key: key, kind: kind) else { return }
            accessGroup = group
        case .synchronizable:
            if case .string(SecConstant.kSecAttrSynchronizableAny) = raw {
                guard role == .search || role == .modifyQuery else {
                    throw SecItemError(errSecParam, "kSecAttrSynchronizableAny is only valid in a search")
                }
                synchronizable = .any
                return
            }
            guard case .number(let n) = try Coercion.attributeValue(raw, key: key, kind: kind) else {
                throw SecItemError(errSecParam, "kSecAttrSynchronizable must be a Bool or kSecAttrSynchronizableAny")
            }
            synchronizable = n != 0 ? .yes : .no
        default:
            attributes[key] = try Coercion.attributeValue(raw, key: key, kind: kind)
        }
    }
}
