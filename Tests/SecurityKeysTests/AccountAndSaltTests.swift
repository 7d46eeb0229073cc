import _SecurityKeyInternals
import Testing
import SecurityKeys

/// How an account is named and chosen, and raw hmac-secret salts as people write them. The salt
/// is RFC 4648 §10's base16 alphabet over 32 bytes, the same bytes in base64 as `base64` (GNU
/// coreutils) prints them.
@Suite struct AccountAndSaltTests {
    static let account = SecurityKeyAccount(
        userID: [0xDE, 0xAD, 0xBE, 0xEF], name: "alice", displayName: "Alice A", credentialID: [1])

    @Test func labels() {
        // base64url of DE AD BE EF is "3q2-7w" (RFC 4648 §5 alphabet).
        #expect(Self.account.label == "alice (Alice A, user ID 3q2-7w)")
        var unnamed = Self.account
        (unnamed.name, unnamed.displayName) = (nil, nil)
        #expect(unnamed.label == "user ID 3q2-7w")
    }

    @Test func choices() {
        #expect(SecurityKeyAccountChoice.name("Alice A").matches(Self.account))
        #expect(SecurityKeyAccountChoice.name("alice").matches(Self.account))
        #expect(!SecurityKeyAccountChoice.name("bob").matches(Self.account))
        #expect(SecurityKeyAccountChoice.userID([0xDE, 0xAD, 0xBE, 0xEF]).matches(Self.account))
        #expect(!SecurityKeyAccountChoice.userID([0xDE]).matches(Self.account))
    }

    @Test func salts() {
        let bytes = (0..<32).map { UInt8($0) }
        #expect(SecurityKeyHMACSecretInput.salt(text: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f") == bytes)
        #expect(SecurityKeyHMACSecretInput.salt(text: " AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n") == bytes)
        #expect(SecurityKeyHMACSecretInput.salt(text: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8") == bytes)
        #expect(SecurityKeyHMACSecretInput.salt(text: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==") == nil)
        #expect(SecurityKeyHMACSecretInput.salt(text: "not a salt") == nil)
    }
}
