import Foundation
import SecItem
import SecItemCore
@testable import SecItemSecretService
import SecItemTestSupport
import Testing

/// An item another client deletes between a query's search and its read of the secrets.
/// gnome-keyring leaves the item out of `GetSecrets`' answer; KWallet (kwalletd5 5.103)
/// fails the whole call with `InvalidArgs` "Can't find item at path P", which a query
/// used to report as `errSecIO` (CI, 2026-12-02, on KWallet).
@Suite("Secret Service: an item deleted between the search and the read")
struct VanishedItemTests {
    @Test("the secrets of items found by a search, some deleted since: the others' secrets, on every provider")
    func secretsOfVanishedItems() throws {
        let backend = try SharedService.backend()
        let client = SharedService.client(backend)
        let service = "vanish-\(UUID().uuidString)"
        func genp(_ account: String, _ extra: [String: Any] = [:]) -> [String: Any] {
            Query.genericPassword(service, account, extra)
        }
        for account in ["a", "b", "c"] {
            try client.addItem(genp(account, [kSecValueData as String: Data("pw-\(account)".utf8)]))
        }
        let namespace = try #require(backend.configuration.namespace)
        func path(_ account: String) throws -> String {
            try #require(try backend.searchPaths([ItemCodec.Reserved.namespace: namespace, "service": service, "account": account]).first)
        }
        let a = try path("a"), b = try path("b"), c = try path("c")
        // b, then c too, deleted by another client after the search.
        try client.deleteItems(genp("b"))
        #expect(try backend.secrets(atPaths: [a, b, c]) == [a: Data("pw-a".utf8), c: Data("pw-c".utf8)])
        try client.deleteItems(genp("c"))
        #expect(try backend.secrets(atPaths: [b, a, c]) == [a: Data("pw-a".utf8)])
        try client.deleteItems(genp("a"))
        #expect(try backend.secrets(atPaths: [a, b, c]) == [:])
    }
}

/// How the backend reads KWallet's answers that name no standard error.
@Suite("Secret Service: KWallet's errors read")
struct KWalletErrorTests {
    func facts(_ message: String, remote: String? = "org.freedesktop.DBus.Error.InvalidArgs") -> GErrorFacts {
        GErrorFacts(domain: .dbus, code: 0, message: "GDBus.Error:\(remote ?? "x.y"): \(message)", remote: remote)
    }

    @Test("\"Can't find item at path P\" names P as gone (errSecInvalidItemRef); other InvalidArgs do not")
    func vanishedItem() {
        let gone = facts("Can't find item at path /org/freedesktop/secrets/collection/kdewallet/260")
        #expect(gone.vanishedItem == "/org/freedesktop/secrets/collection/kdewallet/260")
        #expect(SecItemError(gone, what: "reading secrets", timeout: .seconds(5), timedOut: false, phase: .call).status == errSecInvalidItemRef)
        #expect(facts("Collection object path is invalid").vanishedItem == nil)
        #expect(facts("Can't find item at path /a/b", remote: "org.example.Other").vanishedItem == nil)
        #expect(SecItemError(facts("Collection object path is invalid"), what: "x", timeout: .seconds(5), timedOut: false, phase: .call).status == errSecIO)
    }

    @Test("a refused client key and a lost session call for a new session; other errors do not")
    func sessionFailures() {
        #expect(facts("Client public key size is invalid").losesSession)
        #expect(facts("Can't find session /org/freedesktop/secrets/session/227", remote: "org.freedesktop.DBus.Error.UnknownObject").losesSession)
        #expect(!facts("Can't find item at path /org/freedesktop/secrets/collection/kdewallet/2").losesSession)
        #expect(!facts("Item label is missing (org.freedesktop.Secret.Item.Label)").losesSession)
    }
}
