// The kSec… constants, with exactly the string values of Apple's Security framework
// (OSX/sec/Security/SecItemConstants.c), as listed in the contract (docs/secitem-semantics.md §1).
// MARK: Item classes and keys
/// `class`
public let kSecClass: CFString = "class"
/// `genp`
public let kSecClassGenericPassword: CFString = "genp"
/// `inet`
public let kSecClassInternetPassword: CFString = "inet"
/// `cert`
public let kSecClassCertificate: CFString = "cert"
/// `keys`
public let kSecClassKey: CFString = "keys"
/// `idnt`
public let kSecClassIdentity: CFString = "idnt"
/// `v_Data`
public let kSecValueData: CFString = "v_Data"
/// `v_Ref`
public let kSecValueRef: CFString = "v_Ref"
/// `v_PersistentRef`
public let kSecValuePersistentRef: CFString = "v_PersistentRef"
/// `r_Data`
public let kSecReturnData: CFString = "r_Data"
/// `r_Attributes`
public let kSecReturnAttributes: CFString = "r_Attributes"
/// `r_Ref`
public let kSecReturnRef: CFString = "r_Ref"
/// `r_PersistentRef`
public let kSecReturnPersistentRef: CFString = "r_PersistentRef"
/// `m_Limit`
public let kSecMatchLimit: CFString = "m_Limit"
/// `m_LimitOne`
public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// `m_LimitAll`
public let kSecMatchLimitAll: CFString = "m_LimitAll"
/// `m_CaseInsensitive`
public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// `m_ItemList`
public let kSecMatchItemList: CFString = "m_ItemList"
/// `nleg`
public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// `u_AuthUI`
public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
/// `u_AuthCtx`
public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// `u_AuthUIA`
public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
/// `u_AuthUIF`
public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
/// `u_AuthUIS`
public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
/// `u_OpPrompt`
public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// `syna`
public let kSecAttrSynchronizableAny: CFString = "syna"
/// `ak`
public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// `ck`
public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// `dk`
public let kSecAttrAccessibleAlways: CFString = "dk"
/// `aku`
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// `cku`
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// `dku`
public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"
/// `akpu`
public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"

// MARK: Attribute keys
/// `pdmn`
public let kSecAttrAccessible: CFString = "pdmn"
/// `accc`
public let kSecAttrAccessControl: CFString = "accc"
/// `agrp`
public let kSecAttrAccessGroup: CFString = "agrp"
/// `sync`
public let kSecAttrSynchronizable: CFString = "sync"
/// `cdat`
public let kSecAttrCreationDate: CFString = "cdat"
/// `mdat`
public let kSecAttrModificationDate: CFString = "mdat"
/// `desc`
public let kSecAttrDescription: CFString = "desc"
/// `icmt`
public let kSecAttrComment: CFString = "icmt"
/// `crtr`
public let kSecAttrCreator: CFString = "crtr"
/// `type`
public let kSecAttrType: CFString = "type"
/// `labl`
public let kSecAttrLabel: CFString = "labl"
/// `invi`
public let kSecAttrIsInvisible: CFString = "invi"
/// `nega`
public let kSecAttrIsNegative: CFString = "nega"
/// `acct`
public let kSecAttrAccount: CFString = "acct"
/// `svce`
public let kSecAttrService: CFString = "svce"
/// `gena`
public let kSecAttrGeneric: CFString = "gena"
/// `sdmn`
public let kSecAttrSecurityDomain: CFString = "sdmn"
/// `srvr`
public let kSecAttrServer: CFString = "srvr"
/// `ptcl`
public let kSecAttrProtocol: CFString = "ptcl"
/// `atyp`
public let kSecAttrAuthenticationType: CFString = "atyp"
/// `port`
public let kSecAttrPort: CFString = "port"
/// `path`
public let kSecAttrPath: CFString = "path"
/// `kcls`
public let kSecAttrKeyClass: CFString = "kcls"
/// `klbl`
public let kSecAttrApplicationLabel: CFString = "klbl"
/// `atag`
public let kSecAttrApplicationTag: CFString = "atag"
/// `type`
public let kSecAttrKeyType: CFString = "type"
/// `bsiz`
public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// `esiz`
public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// `sdat`
public let kSecAttrStartDate: CFString = "sdat"
/// `edat`
public let kSecAttrEndDate: CFString = "edat"
/// `perm`
public let kSecAttrIsPermanent: CFString = "perm"
/// `sens`
public let kSecAttrIsSensitive: CFString = "sens"
/// `extr`
public let kSecAttrIsExtractable: CFString = "extr"
/// `encr`
public let kSecAttrCanEncrypt: CFString = "encr"
/// `decr`
public let kSecAttrCanDecrypt: CFString = "decr"
/// `drve`
public let kSecAttrCanDerive: CFString = "drve"
/// `sign`
public let kSecAttrCanSign: CFString = "sign"
/// `vrfy`
public let kSecAttrCanVerify: CFString = "vrfy"
/// `wrap`
public let kSecAttrCanWrap: CFString = "wrap"
/// `unwp`
public let kSecAttrCanUnwrap: CFString = "unwp"
/// `ctyp`
public let kSecAttrCertificateType: CFString = "ctyp"
/// `cenc`
public let kSecAttrCertificateEncoding: CFString = "cenc"
/// `subj`
public let kSecAttrSubject: CFString = "subj"
/// `issr`
public let kSecAttrIssuer: CFString = "issr"
/// `slnr`
public let kSecAttrSerialNumber: CFString = "slnr"
/// `skid`
public let kSecAttrSubjectKeyID: CFString = "skid"
/// `pkhh`
public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// `crtr`
public let kSecAttrKeyCreator: CFString = "crtr"
/// `tkid`
public let kSecAttrTokenID: CFString = "tkid"

// MARK: kSecAttrProtocol values
/// `"ftp "` (the code is exactly four characters)
public let kSecAttrProtocolFTP: CFString = "ftp "
/// `"ftpa"` (the code is exactly four characters)
public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
/// `"http"` (the code is exactly four characters)
public let kSecAttrProtocolHTTP: CFString = "http"
/// `"irc "` (the code is exactly four characters)
public let kSecAttrProtocolIRC: CFString = "irc "
/// `"nntp"` (the code is exactly four characters)
public let kSecAttrProtocolNNTP: CFString = "nntp"
/// `"pop3"` (the code is exactly four characters)
public let kSecAttrProtocolPOP3: CFString = "pop3"
/// `"smtp"` (the code is exactly four characters)
public let kSecAttrProtocolSMTP: CFString = "smtp"
/// `"sox "` (the code is exactly four characters)
public let kSecAttrProtocolSOCKS: CFString = "sox "
/// `"imap"` (the code is exactly four characters)
public let kSecAttrProtocolIMAP: CFString = "imap"
/// `"ldap"` (the code is exactly four characters)
public let kSecAttrProtocolLDAP: CFString = "ldap"
/// `"atlk"` (the code is exactly four characters)
public let kSecAttrProtocolAppleTalk: CFString = "atlk"
/// `"afp "` (the code is exactly four characters)
public let kSecAttrProtocolAFP: CFString = "afp "
/// `"teln"` (the code is exactly four characters)
public let kSecAttrProtocolTelnet: CFString = "teln"
/// `"ssh "` (the code is exactly four characters)
public let kSecAttrProtocolSSH: CFString = "ssh "
/// `"ftps"` (the code is exactly four characters)
public let kSecAttrProtocolFTPS: CFString = "ftps"
/// `"htps"` (the code is exactly four characters)
public let kSecAttrProtocolHTTPS: CFString = "htps"
/// `"htpx"` (the code is exactly four characters)
public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
/// `"htsx"` (the code is exactly four characters)
public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
/// `"ftpx"` (the code is exactly four characters)
public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
/// `"smb "` (the code is exactly four characters)
public let kSecAttrProtocolSMB: CFString = "smb "
/// `"rtsp"` (the code is exactly four characters)
public let kSecAttrProtocolRTSP: CFString = "rtsp"
/// `"rtsx"` (the code is exactly four characters)
public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
/// `"daap"` (the code is exactly four characters)
public let kSecAttrProtocolDAAP: CFString = "daap"
/// `"eppc"` (the code is exactly four characters)
public let kSecAttrProtocolEPPC: CFString = "eppc"
/// `"ipp "` (the code is exactly four characters)
public let kSecAttrProtocolIPP: CFString = "ipp "
/// `"ntps"` (the code is exactly four characters)
public let kSecAttrProtocolNNTPS: CFString = "ntps"
/// `"ldps"` (the code is exactly four characters)
public let kSecAttrProtocolLDAPS: CFString = "ldps"
/// `"tels"` (the code is exactly four characters)
public let kSecAttrProtocolTelnetS: CFString = "tels"
/// `"imps"` (the code is exactly four characters)
public let kSecAttrProtocolIMAPS: CFString = "imps"
/// `"ircs"` (the code is exactly four characters)
public let kSecAttrProtocolIRCS: CFString = "ircs"
/// `"pops"` (the code is exactly four characters)
public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: kSecAttrAuthenticationType values
/// `ntlm`
public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
/// `msna`
public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
/// `dpaa`
public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
/// `rpaa`
public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
/// `http`
public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
/// `httd`
public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
/// `form`
public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
/// `dflt`
public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: kSecAttrKeyClass and kSecAttrKeyType values
/// `0`
public let kSecAttrKeyClassPublic: CFString = "0"
/// `1`
public let kSecAttrKeyClassPrivate: CFString = "1"
/// `2`
public let kSecAttrKeyClassSymmetric: CFString = "2"
/// `42`
public let kSecAttrKeyTypeRSA: CFString = "42"
/// `73`
public let kSecAttrKeyTypeEC: CFString = "73"
/// `73`
public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// `105`
public let kSecAttrKeyTypeEd25519: CFString = "105"
/// `106`
public let kSecAttrKeyTypeX25519: CFString = "106"
