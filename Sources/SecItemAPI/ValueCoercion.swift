import SecItemSecurity
import SecItemModel
import Foundation

/// What a dictionary value is, once Optional wrapping and Foundation bridging
/// are looked through.
enum RawValue {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    /// A `SecAccessControl` (only `kSecAttrAccessControl` takes one).
    case accessControl(SecAccessControl)
    /// An authentication context (`kSecUseAuthenticationContext`: LocalAuthentication's `LAContext`).
    case authenticationContext(any AuthenticationContext)
    /// A keychain object (`SecKey`): only `kSecValueRef` takes one.
    case reference(ItemReference)
    case other(String)

    init(_ value: Any) {
        // The common cases first, by exact type: this runs for every value of every call.
        if let common = Self.ofCommonType(value) {
            self = common
        } else if let s = value as? String {
            self = .string(s)
        } else if let d = value as? Data {
            self = .data(d)
        } else if let n = value as? NSNumber, type(of: value) is NSNumber.Type {
            self = RawValue(number: n)
        } else if let i = value as? any BinaryInteger {
            if let v = Int64(exactly: i) { self = .integer(v) } else { self = .other("an integer out of range") }
        } else if let d = value as? any BinaryFloatingPoint {
            self = .double(Double(d))
        } else if let s = value as? any StringProtocol {
            self = .string(String(s))
        } else if let d = value as? Date {
            self = .date(d)
        } else if let optional = value as? any OptionalValue {
            // kCFBooleanTrue is a Bool?; values may be String? and the like.
            if let wrapped = optional.wrappedAny { self = RawValue(wrapped) } else { self = .null }
        } else if value is NSNull {
            self = .null
        } else if let access = value as? SecAccessControl {
            self = .accessControl(access)
        } else if let context = value as? any AuthenticationContext {
            self = .authenticationContext(context)
        } else if let key = value as? SecKey {
            self = .reference(.key(key))
        } else if let certificate = value as? SecCertificate {
            self = .reference(.certificate(certificate))
        } else if let identity = value as? SecIdentity {
            self = .reference(.identity(identity))
        } else {
            self = .other(String(describing: type(of: value)))
        }
    }

    /// `value` when its type is exactly `String`, `Bool`, `Data` or `Int`, else `nil`.
    ///
    /// Called with an `Any`, which Swift opens (SE-0352), so `T` is the type of the
    /// value inside: the test is a metadata compare and the value is taken without a
    /// runtime cast (`swift_dynamicCast` cost more than the rest of the parse's
    /// handling of a value).
    private static func ofCommonType<T>(_ value: T) -> RawValue? {
        if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == Data.self { return .data(unsafeBitCast(value, to: Data.self)) }
        if T.self == Int.self { return .integer(Int64(unsafeBitCast(value, to: Int.self))) }
        // The kSec… constants used as values (kSecClassGenericPassword, kSecMatchLimitOne, …):
        // exactly NSString, whose bridge to String hands back the string it holds.
        if T.self == NSString.self {
            return .string(unsafeDowncast(unsafeBitCast(value, to: AnyObject.self), to: NSString.self) as String)
        }
        return nil
    }

    private init(number n: NSNumber) {
        let type = String(cString: n.objCType)
        switch type {
        case "c" where n.int64Value == 0 || n.int64Value == 1, "B":
            self = .bool(n.boolValue)
        case "f", "d":
            self = .double(n.doubleValue)
        default:
            self = .integer(n.int64Value)
        }
    }

    /// A short name of the value's type, for error details (never the value).
    var typeName: String {
        switch self {
        case .null: return "nil"
        case .bool: return "Bool"
        case .integer: return "integer"
        case .double: return "floating-point number"
        case .string: return "String"
        case .data: return "Data"
        case .date: return "Date"
        case .accessControl: return "SecAccessControl"
        case .authenticationContext: return "LAContext"
        case .reference(let reference): return reference.typeName
        case .other(let name): return name
        }
    }

    var asBool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }
}

enum Coercion {
    /// Converts a caller's value for attribute `key`, of `kind`, to its stored form (contract §4).
    static func attributeValue(_ raw: RawValue, key: String, kind: AttributeKind) throws(SecItemError) -> AttributeValue {
        func bad() -> SecItemError {
            SecItemError(errSecParam, "attribute '\(key)' does not accept a value of type \(raw.typeName)")
        }
        switch kind {
        case .blob:
            switch raw {
            case .string(let s): return .string(s)
            case .data(let d): return .data(d)
            case .integer(let i): return .number(i)
            case .double(let d):
                guard let i = Int64(exactly: d) else { throw bad() }
                return .number(i)
            default: throw bad()
            }
        case .string:
            switch raw {
            case .string(let s): return .string(s)
            case .data(let d):
                guard let s = String(bytes: d, encoding: .utf8) else {
                    throw SecItemError(errSecParam, "attribute '\(key)' needs UTF-8 text; the Data given is not UTF-8")
                }
                return .string(s)
            default: throw bad()
            }
        case .access:
            guard case .string(let s) = raw else { throw bad() }
            guard Schema.accessibilityValues.contains(s) else {
                throw SecItemError(errSecParam, "'\(s)' is not a kSecAttrAccessible value")
            }
            return .string(s)
        case .data:
            switch raw {
            case .data(let d): return .data(d)
            case .string(let s): return .data(Data(s.utf8))
            default: throw bad()
            }
        case .number:
            switch raw {
            case .integer(let i): return .number(i)
            case .bool(let b): return .number(b ? 1 : 0)
            case .double(let d):
                guard let i = Int64(exactly: d) else { throw bad() }
                return .number(i)
            case .string(let s):
                if let i = Int64(s) { return .number(i) }
                return .string(s)
            default: throw bad()
            }
        case .date:
            guard case .date(let d) = raw else { throw bad() }
            return .date(d)
        }
    }
}
