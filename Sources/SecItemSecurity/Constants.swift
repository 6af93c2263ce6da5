public import Foundation

// The kSec… constants, with exactly the string values of Apple's Security framework
// (OSX/sec/Security/SecItemConstants.c), as listed in the contract (docs/secitem-semantics.md §1).
//
// Each is a `CFString` (`NSString`), as on Apple platforms. `NSString` is not `Sendable`
// in swift-corelibs-foundation, hence `nonisolated(unsafe)`: these instances are
// immutable `NSString`s (never `NSMutableString`) that nothing can change.
// MARK: Item classes and keys
/// `class`
nonisolated(unsafe) public let kSecClass: CFString = "class"
/// `genp`
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// `inet`
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = "inet"
/// `cert`
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// `keys`
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// `idnt`
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"
/// `v_Data`
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
/// `v_Ref`
nonisolated(unsafe) public let kSecValueRef: CFString = "v_Ref"
/// `v_PersistentRef`
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = "v_PersistentRef"
/// `r_Data`
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
/// `r_Attributes`
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
/// `r_Ref`
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
/// `r_PersistentRef`
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = "r_PersistentRef"
/// `m_Limit`
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// `m_LimitOne`
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// `m_LimitAll`
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"
/// `m_CaseInsensitive`
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// `m_ItemList`
nonisolated(unsafe) public let kSecMatchItemList: CFString = "m_ItemList"
/// `nleg`
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// `u_AuthUI`
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
/// `u_NoAuthUI`: deprecated by Apple in favour of kSecUseAuthenticationUI; `true` means
/// kSecUseAuthenticationUIFail.
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"
/// `u_Keychain`: macOS file keychains (`SecKeychain`); errSecUnimplemented here.
nonisolated(unsafe) public let kSecUseKeychain: CFString = "u_Keychain"
/// `m_SearchList`: macOS keychain search lists; errSecUnimplemented in a search here.
nonisolated(unsafe) public let kSecMatchSearchList: CFString = "m_SearchList"
/// `u_AuthCtx`
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// `u_AuthUIA`
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
/// `u_AuthUIF`
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
/// `u_AuthUIS`
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
/// `u_OpPrompt`
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// `syna`
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"
/// `ak`
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// `ck`
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// `dk`
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = "dk"
/// `aku`
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// `cku`
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// `dku`
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"
/// `akpu`
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"

// MARK: Attribute keys
/// `pdmn`
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
/// `accc`
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
/// `agrp`
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
/// `sync`
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"
/// `cdat`
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = "cdat"
/// `mdat`
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = "mdat"
/// `desc`
nonisolated(unsafe) public let kSecAttrDescription: CFString = "desc"
/// `icmt`
nonisolated(unsafe) public let kSecAttrComment: CFString = "icmt"
/// `crtr`
nonisolated(unsafe) public let kSecAttrCreator: CFString = "crtr"
/// `type`
nonisolated(unsafe) public let kSecAttrType: CFString = "type"
/// `labl`
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"
/// `invi`
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = "invi"
/// `nega`
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = "nega"
/// `acct`
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
/// `svce`
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
/// `gena`
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"
/// `sdmn`
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = "sdmn"
/// `srvr`
nonisolated(unsafe) public let kSecAttrServer: CFString = "srvr"
/// `ptcl`
nonisolated(unsafe) public let kSecAttrProtocol: CFString = "ptcl"
/// `atyp`
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = "atyp"
/// `port`
nonisolated(unsafe) public let kSecAttrPort: CFString = "port"
/// `path`
nonisolated(unsafe) public let kSecAttrPath: CFString = "path"
/// `kcls`
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = "kcls"
/// `klbl`
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = "klbl"
/// `atag`
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"
/// `type`
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"
/// `bsiz`
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// `esiz`
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// `sdat`
nonisolated(unsafe) public let kSecAttrStartDate: CFString = "sdat"
/// `edat`
nonisolated(unsafe) public let kSecAttrEndDate: CFString = "edat"
/// `perm`
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"
/// `sens`
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = "sens"
/// `extr`
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = "extr"
/// `encr`
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = "encr"
/// `decr`
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = "decr"
/// `drve`
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = "drve"
/// `sign`
nonisolated(unsafe) public let kSecAttrCanSign: CFString = "sign"
/// `vrfy`
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = "vrfy"
/// `wrap`
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = "wrap"
/// `unwp`
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = "unwp"
/// `ctyp`
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = "ctyp"
/// `cenc`
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = "cenc"
/// `subj`
nonisolated(unsafe) public let kSecAttrSubject: CFString = "subj"
/// `issr`
nonisolated(unsafe) public let kSecAttrIssuer: CFString = "issr"
/// `slnr`
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = "slnr"
/// `skid`
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = "skid"
/// `pkhh`
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// `crtr`
nonisolated(unsafe) public let kSecAttrKeyCreator: CFString = "crtr"
/// `tkid`
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"

// MARK: kSecAttrProtocol values
/// `"ftp "` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
/// `"ftpa"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
/// `"http"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
/// `"irc "` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
/// `"nntp"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
/// `"pop3"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
/// `"smtp"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
/// `"sox "` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
/// `"imap"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
/// `"ldap"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
/// `"atlk"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
/// `"afp "` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
/// `"teln"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
/// `"ssh "` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
/// `"ftps"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
/// `"htps"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
/// `"htpx"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
/// `"htsx"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
/// `"ftpx"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
/// `"smb "` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
/// `"rtsp"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
/// `"rtsx"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
/// `"daap"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
/// `"eppc"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
/// `"ipp "` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
/// `"ntps"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
/// `"ldps"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
/// `"tels"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
/// `"imps"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
/// `"ircs"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
/// `"pops"` (the code is exactly four characters)
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: kSecAttrAuthenticationType values
/// `ntlm`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
/// `msna`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
/// `dpaa`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
/// `rpaa`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
/// `http`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
/// `httd`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
/// `form`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
/// `dflt`
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: kSecAttrKeyClass and kSecAttrKeyType values
/// `0`
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
/// `1`
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
/// `2`
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"
/// `42`
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
/// `73`
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"
/// `73`
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// `105`
nonisolated(unsafe) public let kSecAttrKeyTypeEd25519: CFString = "105"
/// `106`
nonisolated(unsafe) public let kSecAttrKeyTypeX25519: CFString = "106"
