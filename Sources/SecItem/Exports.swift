// What `import SecItem` exports: Security's names and names prefixed `SecItem`, nothing else.
//
// `import Security` exports no generic names, so a file can import it next to a module
// with its own `Keychain` or `ItemClass` without "ambiguous use" errors; `import SecItem`
// keeps that promise by re-exporting the core declaration by declaration. The typed
// layer is `import SecItemKeychain`; backend and test plumbing (`ItemQuery`,
// `StoredItem`, `AccessGroups`, …) is `import SecItemCore`, which backends import on purpose.
//
// `ExportsTests` (SecItemCoreTests) fails when a Security-style name in SecItemCore is
// missing here, or when a name here is neither Security's nor prefixed `SecItem`.

// MARK: Backend.swift
@_exported public import protocol SecItemCore.SecItemBackend
@_exported public import protocol SecItemCore.SecItemBatchAdding

// MARK: BackendCapabilities.swift
@_exported public import protocol SecItemCore.SecItemForeignItemsExposing

// MARK: Constants.swift
@_exported public import var SecItemCore.kSecClass
@_exported public import var SecItemCore.kSecClassGenericPassword
@_exported public import var SecItemCore.kSecClassInternetPassword
@_exported public import var SecItemCore.kSecClassCertificate
@_exported public import var SecItemCore.kSecClassKey
@_exported public import var SecItemCore.kSecClassIdentity
@_exported public import var SecItemCore.kSecValueData
@_exported public import var SecItemCore.kSecValueRef
@_exported public import var SecItemCore.kSecValuePersistentRef
@_exported public import var SecItemCore.kSecReturnData
@_exported public import var SecItemCore.kSecReturnAttributes
@_exported public import var SecItemCore.kSecReturnRef
@_exported public import var SecItemCore.kSecReturnPersistentRef
@_exported public import var SecItemCore.kSecMatchLimit
@_exported public import var SecItemCore.kSecMatchLimitOne
@_exported public import var SecItemCore.kSecMatchLimitAll
@_exported public import var SecItemCore.kSecMatchCaseInsensitive
@_exported public import var SecItemCore.kSecMatchItemList
@_exported public import var SecItemCore.kSecUseDataProtectionKeychain
@_exported public import var SecItemCore.kSecUseAuthenticationUI
@_exported public import var SecItemCore.kSecUseAuthenticationContext
@_exported public import var SecItemCore.kSecUseAuthenticationUIAllow
@_exported public import var SecItemCore.kSecUseAuthenticationUIFail
@_exported public import var SecItemCore.kSecUseAuthenticationUISkip
@_exported public import var SecItemCore.kSecUseOperationPrompt
@_exported public import var SecItemCore.kSecAttrSynchronizableAny
@_exported public import var SecItemCore.kSecAttrAccessibleWhenUnlocked
@_exported public import var SecItemCore.kSecAttrAccessibleAfterFirstUnlock
@_exported public import var SecItemCore.kSecAttrAccessibleAlways
@_exported public import var SecItemCore.kSecAttrAccessibleWhenUnlockedThisDeviceOnly
@_exported public import var SecItemCore.kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
@_exported public import var SecItemCore.kSecAttrAccessibleAlwaysThisDeviceOnly
@_exported public import var SecItemCore.kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
@_exported public import var SecItemCore.kSecAttrAccessible
@_exported public import var SecItemCore.kSecAttrAccessControl
@_exported public import var SecItemCore.kSecAttrAccessGroup
@_exported public import var SecItemCore.kSecAttrSynchronizable
@_exported public import var SecItemCore.kSecAttrCreationDate
@_exported public import var SecItemCore.kSecAttrModificationDate
@_exported public import var SecItemCore.kSecAttrDescription
@_exported public import var SecItemCore.kSecAttrComment
@_exported public import var SecItemCore.kSecAttrCreator
@_exported public import var SecItemCore.kSecAttrType
@_exported public import var SecItemCore.kSecAttrLabel
@_exported public import var SecItemCore.kSecAttrIsInvisible
@_exported public import var SecItemCore.kSecAttrIsNegative
@_exported public import var SecItemCore.kSecAttrAccount
@_exported public import var SecItemCore.kSecAttrService
@_exported public import var SecItemCore.kSecAttrGeneric
@_exported public import var SecItemCore.kSecAttrSecurityDomain
@_exported public import var SecItemCore.kSecAttrServer
@_exported public import var SecItemCore.kSecAttrProtocol
@_exported public import var SecItemCore.kSecAttrAuthenticationType
@_exported public import var SecItemCore.kSecAttrPort
@_exported public import var SecItemCore.kSecAttrPath
@_exported public import var SecItemCore.kSecAttrKeyClass
@_exported public import var SecItemCore.kSecAttrApplicationLabel
@_exported public import var SecItemCore.kSecAttrApplicationTag
@_exported public import var SecItemCore.kSecAttrKeyType
@_exported public import var SecItemCore.kSecAttrKeySizeInBits
@_exported public import var SecItemCore.kSecAttrEffectiveKeySize
@_exported public import var SecItemCore.kSecAttrStartDate
@_exported public import var SecItemCore.kSecAttrEndDate
@_exported public import var SecItemCore.kSecAttrIsPermanent
@_exported public import var SecItemCore.kSecAttrIsSensitive
@_exported public import var SecItemCore.kSecAttrIsExtractable
@_exported public import var SecItemCore.kSecAttrCanEncrypt
@_exported public import var SecItemCore.kSecAttrCanDecrypt
@_exported public import var SecItemCore.kSecAttrCanDerive
@_exported public import var SecItemCore.kSecAttrCanSign
@_exported public import var SecItemCore.kSecAttrCanVerify
@_exported public import var SecItemCore.kSecAttrCanWrap
@_exported public import var SecItemCore.kSecAttrCanUnwrap
@_exported public import var SecItemCore.kSecAttrCertificateType
@_exported public import var SecItemCore.kSecAttrCertificateEncoding
@_exported public import var SecItemCore.kSecAttrSubject
@_exported public import var SecItemCore.kSecAttrIssuer
@_exported public import var SecItemCore.kSecAttrSerialNumber
@_exported public import var SecItemCore.kSecAttrSubjectKeyID
@_exported public import var SecItemCore.kSecAttrPublicKeyHash
@_exported public import var SecItemCore.kSecAttrKeyCreator
@_exported public import var SecItemCore.kSecAttrTokenID
@_exported public import var SecItemCore.kSecAttrProtocolFTP
@_exported public import var SecItemCore.kSecAttrProtocolFTPAccount
@_exported public import var SecItemCore.kSecAttrProtocolHTTP
@_exported public import var SecItemCore.kSecAttrProtocolIRC
@_exported public import var SecItemCore.kSecAttrProtocolNNTP
@_exported public import var SecItemCore.kSecAttrProtocolPOP3
@_exported public import var SecItemCore.kSecAttrProtocolSMTP
@_exported public import var SecItemCore.kSecAttrProtocolSOCKS
@_exported public import var SecItemCore.kSecAttrProtocolIMAP
@_exported public import var SecItemCore.kSecAttrProtocolLDAP
@_exported public import var SecItemCore.kSecAttrProtocolAppleTalk
@_exported public import var SecItemCore.kSecAttrProtocolAFP
@_exported public import var SecItemCore.kSecAttrProtocolTelnet
@_exported public import var SecItemCore.kSecAttrProtocolSSH
@_exported public import var SecItemCore.kSecAttrProtocolFTPS
@_exported public import var SecItemCore.kSecAttrProtocolHTTPS
@_exported public import var SecItemCore.kSecAttrProtocolHTTPProxy
@_exported public import var SecItemCore.kSecAttrProtocolHTTPSProxy
@_exported public import var SecItemCore.kSecAttrProtocolFTPProxy
@_exported public import var SecItemCore.kSecAttrProtocolSMB
@_exported public import var SecItemCore.kSecAttrProtocolRTSP
@_exported public import var SecItemCore.kSecAttrProtocolRTSPProxy
@_exported public import var SecItemCore.kSecAttrProtocolDAAP
@_exported public import var SecItemCore.kSecAttrProtocolEPPC
@_exported public import var SecItemCore.kSecAttrProtocolIPP
@_exported public import var SecItemCore.kSecAttrProtocolNNTPS
@_exported public import var SecItemCore.kSecAttrProtocolLDAPS
@_exported public import var SecItemCore.kSecAttrProtocolTelnetS
@_exported public import var SecItemCore.kSecAttrProtocolIMAPS
@_exported public import var SecItemCore.kSecAttrProtocolIRCS
@_exported public import var SecItemCore.kSecAttrProtocolPOP3S
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeNTLM
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeMSN
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeDPA
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeRPA
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeHTTPBasic
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeHTTPDigest
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeHTMLForm
@_exported public import var SecItemCore.kSecAttrAuthenticationTypeDefault
@_exported public import var SecItemCore.kSecAttrKeyClassPublic
@_exported public import var SecItemCore.kSecAttrKeyClassPrivate
@_exported public import var SecItemCore.kSecAttrKeyClassSymmetric
@_exported public import var SecItemCore.kSecAttrKeyTypeRSA
@_exported public import var SecItemCore.kSecAttrKeyTypeEC
@_exported public import var SecItemCore.kSecAttrKeyTypeECSECPrimeRandom
@_exported public import var SecItemCore.kSecAttrKeyTypeEd25519
@_exported public import var SecItemCore.kSecAttrKeyTypeX25519
@_exported public import var SecItemCore.kSecUseNoAuthenticationUI
@_exported public import var SecItemCore.kSecUseKeychain
@_exported public import var SecItemCore.kSecMatchSearchList

// MARK: CoreFoundationTypes.swift
@_exported public import typealias SecItemCore.OSStatus
@_exported public import typealias SecItemCore.CFTypeRef
@_exported public import typealias SecItemCore.CFString
@_exported public import typealias SecItemCore.CFDictionary
@_exported public import typealias SecItemCore.CFData
@_exported public import typealias SecItemCore.CFArray
@_exported public import typealias SecItemCore.CFBoolean
@_exported public import typealias SecItemCore.CFNumber
@_exported public import typealias SecItemCore.CFDate
@_exported public import var SecItemCore.kCFBooleanTrue
@_exported public import var SecItemCore.kCFBooleanFalse
@_exported public import var SecItemCore.noErr
@_exported public import typealias SecItemCore.CFError
@_exported public import typealias SecItemCore.CFIndex
@_exported public import typealias SecItemCore.CFOptionFlags
@_exported public import typealias SecItemCore.CFErrorDomain
@_exported public import class SecItemCore.CFAllocator
@_exported public import var SecItemCore.kCFAllocatorDefault
@_exported public import func SecItemCore.CFErrorGetCode
@_exported public import func SecItemCore.CFErrorGetDomain
@_exported public import func SecItemCore.CFErrorCopyUserInfo
@_exported public import func SecItemCore.CFErrorCopyDescription
@_exported public import var SecItemCore.kCFErrorDescriptionKey
@_exported public import protocol SecItemCore.SecItemDictionaryConvertible

// MARK: Configuration
@_exported public import struct SecItemCore.SecItemConfiguration
@_exported public import struct SecItemCore.SecItemConfigFile
@_exported public import protocol SecItemCore.SecItemBackendProvider
@_exported public import struct SecItemCore.SecItemApplicationIdentifier
@_exported public import struct SecItemCore.SecItemSetting
@_exported public import struct SecItemCore.SecItemSettingDeclaration
@_exported public import enum SecItemCore.SecItemSettingCatalog
@_exported public import enum SecItemCore.SecItemCoreSettings

// MARK: SecItemClient.swift
@_exported public import struct SecItemCore.SecItemClient

// MARK: SecItemError.swift
@_exported public import struct SecItemCore.SecItemError

// MARK: Status.swift
@_exported public import var SecItemCore.errSecSuccess
@_exported public import var SecItemCore.errSecUnimplemented
@_exported public import var SecItemCore.errSecIO
@_exported public import var SecItemCore.errSecParam
@_exported public import var SecItemCore.errSecAllocate
@_exported public import var SecItemCore.errSecUserCanceled
@_exported public import var SecItemCore.errSecBadReq
@_exported public import var SecItemCore.errSecMissingEntitlement
@_exported public import var SecItemCore.errSecNotAvailable
@_exported public import var SecItemCore.errSecReadOnly
@_exported public import var SecItemCore.errSecAuthFailed
@_exported public import var SecItemCore.errSecNoSuchKeychain
@_exported public import var SecItemCore.errSecInvalidKeychain
@_exported public import var SecItemCore.errSecDuplicateItem
@_exported public import var SecItemCore.errSecItemNotFound
@_exported public import var SecItemCore.errSecNoSuchAttr
@_exported public import var SecItemCore.errSecInvalidItemRef
@_exported public import var SecItemCore.errSecNoSuchClass
@_exported public import var SecItemCore.errSecInteractionNotAllowed
@_exported public import var SecItemCore.errSecReadOnlyAttr
@_exported public import var SecItemCore.errSecInteractionRequired
@_exported public import var SecItemCore.errSecDataNotAvailable
@_exported public import var SecItemCore.errSecDecode
@_exported public import func SecItemCore.SecCopyErrorMessageString
@_exported public import func SecItemCore.SecItemCopyLastError
@_exported public import var SecItemCore.errSecDskFull
@_exported public import var SecItemCore.errSecOpWr
@_exported public import var SecItemCore.errSecWrPerm
@_exported public import var SecItemCore.errSecInternalComponent
@_exported public import var SecItemCore.errSecCoreFoundationUnknown
@_exported public import var SecItemCore.errSecNoAccessForItem
@_exported public import var SecItemCore.errSecInvalidOwnerEdit
@_exported public import var SecItemCore.errSecUnsupportedFormat
@_exported public import var SecItemCore.errSecUnknownFormat
@_exported public import var SecItemCore.errSecPassphraseRequired
@_exported public import var SecItemCore.errSecDuplicateKeychain
@_exported public import var SecItemCore.errSecBufferTooSmall
@_exported public import var SecItemCore.errSecDataTooLarge
@_exported public import var SecItemCore.errSecInvalidSearchRef
@_exported public import var SecItemCore.errSecNoDefaultKeychain
@_exported public import var SecItemCore.errSecWrongSecVersion
@_exported public import var SecItemCore.errSecKeySizeNotAllowed
@_exported public import var SecItemCore.errSecInDarkWake
@_exported public import var SecItemCore.errSecRestrictedAPI
@_exported public import var SecItemCore.errSecServiceNotAvailable
@_exported public import var SecItemCore.errSecVerifyFailed
@_exported public import var SecItemCore.errSecNotTrusted

// MARK: AccessControl.swift
@_exported public import struct SecItemCore.SecAccessControlCreateFlags
@_exported public import class SecItemCore.SecAccessControl
@_exported public import func SecItemCore.SecAccessControlCreateWithFlags
@_exported public import typealias SecItemCore.SecRandomRef
@_exported public import var SecItemCore.kSecRandomDefault
@_exported public import func SecItemCore.SecRandomCopyBytes

// MARK: Keys/SecKey.swift, Keys/SecKeyAlgorithm.swift
@_exported public import class SecItemCore.SecKey
@_exported public import struct SecItemCore.SecKeyAlgorithm
@_exported public import enum SecItemCore.SecKeyOperationType
@_exported public import var SecItemCore.kSecPrivateKeyAttrs
@_exported public import var SecItemCore.kSecPublicKeyAttrs
@_exported public import var SecItemCore.kSecKeyKeyExchangeParameterRequestedSize
@_exported public import var SecItemCore.kSecKeyKeyExchangeParameterSharedInfo
@_exported public import class SecItemCore.SecCertificate
@_exported public import class SecItemCore.SecIdentity
