// Status codes and their messages, as in Apple's base/SecBase.h.
public import Foundation

/// No error.
public let errSecSuccess: OSStatus = 0
/// Function or operation not implemented.
public let errSecUnimplemented: OSStatus = -4
/// I/O error.
public let errSecIO: OSStatus = -36
/// One or more parameters passed to a function were not valid.
public let errSecParam: OSStatus = -50
/// Failed to allocate memory.
public let errSecAllocate: OSStatus = -108
/// User canceled the operation.
public let errSecUserCanceled: OSStatus = -128
/// Bad parameter or invalid state for operation.
public let errSecBadReq: OSStatus = -909
/// A required entitlement isn't present.
public let errSecMissingEntitlement: OSStatus = -34018
/// No keychain is available.
public let errSecNotAvailable: OSStatus = -25291
/// This keychain cannot be modified.
public let errSecReadOnly: OSStatus = -25292
/// The user name or passphrase you entered is not correct.
public let errSecAuthFailed: OSStatus = -25293
/// The specified keychain could not be found.
public let errSecNoSuchKeychain: OSStatus = -25294
/// The specified keychain is not a valid keychain file.
public let errSecInvalidKeychain: OSStatus = -25295
/// The specified item already exists in the keychain.
public let errSecDuplicateItem: OSStatus = -25299
/// The specified item could not be found in the keychain.
public let errSecItemNotFound: OSStatus = -25300
/// The specified attribute does not exist.
public let errSecNoSuchAttr: OSStatus = -25303
/// The specified item is no longer valid.
public let errSecInvalidItemRef: OSStatus = -25304
/// The specified item does not appear to be a valid keychain item.
public let errSecNoSuchClass: OSStatus = -25306
/// User interaction is not allowed.
public let errSecInteractionNotAllowed: OSStatus = -25308
/// The specified attribute could not be modified.
public let errSecReadOnlyAttr: OSStatus = -25309
/// User interaction is required, but is currently not allowed.
public let errSecInteractionRequired: OSStatus = -25315
/// The contents of this item cannot be retrieved.
public let errSecDataNotAvailable: OSStatus = -25316
/// Unable to decode the provided data.
public let errSecDecode: OSStatus = -26275

// The rest of SecBase.h's codes that keychain code switches over. This package returns
// none of them today; they exist so that such switches compile, and have Apple's messages.
/// The disk is full.
public let errSecDskFull: OSStatus = -34
/// File already open with write permission.
public let errSecOpWr: OSStatus = -49
/// Write permissions error.
public let errSecWrPerm: OSStatus = -61
/// An internal component failed.
public let errSecInternalComponent: OSStatus = -2070
/// A Core Foundation error occurred.
public let errSecCoreFoundationUnknown: OSStatus = -4960
/// The specified item has no access control.
public let errSecNoAccessForItem: OSStatus = -25243
/// Invalid attempt to change the owner of this item.
public let errSecInvalidOwnerEdit: OSStatus = -25244
/// The specified import or export format is not supported.
public let errSecUnsupportedFormat: OSStatus = -25256
/// The item you are trying to import has an unknown format.
public let errSecUnknownFormat: OSStatus = -25257
/// A password is required for import or export.
public let errSecPassphraseRequired: OSStatus = -25260
/// A keychain with the same name already exists.
public let errSecDuplicateKeychain: OSStatus = -25296
/// There is not enough memory available to use the specified item.
public let errSecBufferTooSmall: OSStatus = -25301
/// This item contains information which is too large or in a format that cannot be displayed.
public let errSecDataTooLarge: OSStatus = -25302
/// Unable to search the current keychain.
public let errSecInvalidSearchRef: OSStatus = -25305
/// A default keychain could not be found.
public let errSecNoDefaultKeychain: OSStatus = -25307
/// This keychain was created by a different version of the software and cannot be opened.
public let errSecWrongSecVersion: OSStatus = -25310
/// This item specifies a key size which is too large or too small.
public let errSecKeySizeNotAllowed: OSStatus = -25311
/// In dark wake, no UI possible
public let errSecInDarkWake: OSStatus = -25320
/// Operation not permitted.
public let errSecRestrictedAPI: OSStatus = -34020
/// The required service is not available.
public let errSecServiceNotAvailable: OSStatus = -67585
/// A cryptographic verification failure has occurred.
public let errSecVerifyFailed: OSStatus = -67808
/// The trust policy was not trusted.
public let errSecNotTrusted: OSStatus = -67843

let statusMessages: [OSStatus: String] = [
    errSecSuccess: "No error.",
    errSecUnimplemented: "Function or operation not implemented.",
    errSecIO: "I/O error.",
    errSecParam: "One or more parameters passed to a function were not valid.",
    errSecAllocate: "Failed to allocate memory.",
    errSecUserCanceled: "User canceled the operation.",
    errSecBadReq: "Bad parameter or invalid state for operation.",
    errSecMissingEntitlement: "A required entitlement isn't present.",
    errSecNotAvailable: "No keychain is available. You may need to restart your computer.",
    errSecReadOnly: "This keychain cannot be modified.",
    errSecAuthFailed: "The user name or passphrase you entered is not correct.",
    errSecNoSuchKeychain: "The specified keychain could not be found.",
    errSecInvalidKeychain: "The specified keychain is not a valid keychain file.",
    errSecDuplicateItem: "The specified item already exists in the keychain.",
    errSecItemNotFound: "The specified item could not be found in the keychain.",
    errSecNoSuchAttr: "The specified attribute does not exist.",
    errSecInvalidItemRef: "The specified item is no longer valid. It may have been deleted from the keychain.",
    errSecNoSuchClass: "The specified item does not appear to be a valid keychain item.",
    errSecInteractionNotAllowed: "User interaction is not allowed.",
    errSecReadOnlyAttr: "The specified attribute could not be modified.",
    errSecInteractionRequired: "User interaction is required, but is currently not allowed.",
    errSecDataNotAvailable: "The contents of this item cannot be retrieved.",
    errSecDecode: "Unable to decode the provided data.",
    errSecDskFull: "The disk is full.",
    errSecOpWr: "File already open with write permission.",
    errSecWrPerm: "Write permissions error.",
    errSecInternalComponent: "An internal component failed.",
    errSecCoreFoundationUnknown: "A Core Foundation error occurred.",
    errSecNoAccessForItem: "The specified item has no access control.",
    errSecInvalidOwnerEdit: "Invalid attempt to change the owner of this item.",
    errSecUnsupportedFormat: "The specified import or export format is not supported.",
    errSecUnknownFormat: "The item you are trying to import has an unknown format.",
    errSecPassphraseRequired: "A password is required for import or export.",
    errSecDuplicateKeychain: "A keychain with the same name already exists.",
    errSecBufferTooSmall: "There is not enough memory available to use the specified item.",
    errSecDataTooLarge: "This item contains information which is too large or in a format that cannot be displayed.",
    errSecInvalidSearchRef: "Unable to search the current keychain.",
    errSecNoDefaultKeychain: "A default keychain could not be found.",
    errSecWrongSecVersion: "This keychain was created by a different version of the software and cannot be opened.",
    errSecKeySizeNotAllowed: "This item specifies a key size which is too large or too small.",
    errSecInDarkWake: "In dark wake, no UI possible",
    errSecRestrictedAPI: "Operation not permitted.",
    errSecServiceNotAvailable: "The required service is not available.",
    errSecVerifyFailed: "A cryptographic verification failure has occurred.",
    errSecNotTrusted: "The trust policy was not trusted.",
]

/// Returns the message for a status code, as Apple's `SecCopyErrorMessageString` does.
///
/// An unknown code gives `"OSStatus <n>"`.
///
/// - Parameters:
///   - status: The status returned by a SecItem function.
///   - reserved: Unused; pass `nil` (kept for source compatibility).
/// - Returns: The message; never `nil` on Linux (optional to match Apple's signature).
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    NSString(string: statusMessage(status))
}

/// Apple's message for `status`, or `"OSStatus <n>"`.
func statusMessage(_ status: OSStatus) -> String {
    statusMessages[status] ?? "OSStatus \(status)"
}
