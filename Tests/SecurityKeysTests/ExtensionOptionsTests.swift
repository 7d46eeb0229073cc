import Testing
import SecurityKeys

/// Extension inputs as `register` and `authenticate` take them on the command line: base64 per
/// RFC 4648 (§4 and §5 alphabets), credProtect levels by CTAP 2.2 §12.1's numbers and WebAuthn's
/// policy names, and the options that need or exclude each other.
@Suite struct ExtensionOptionsTests {
    func request() -> SecurityKeyCredentialRegistrationRequest {
        SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org").createCredentialRegistrationRequest(
            challenge: [UInt8](repeating: 1, count: 32), displayName: "A", name: "a", userID: [1])
    }

    @Test func registrationInputsAreParsedFromText() throws {
        let options = SecurityKeyRegistrationExtensionOptions(
            credProtect: "2", enforceCredProtect: true, credBlob: "AQID", prf: true, prfSalt: "Zm9v", prfSalt2: "YmFy",
            hmacSecret: true, largeBlob: "preferred")
        try options.validate()
        var request = request()
        try options.apply(to: &request)
        // CTAP 2.2 §12.1: level 2 is userVerificationOptionalWithCredentialIDList.
        #expect(request.credentialProtection == SecurityKeyCredentialProtection(
            policy: .userVerificationOptionalWithCredentialIDList, isEnforced: true))
        #expect(request.credentialBlob == [1, 2, 3])
        #expect(request.prf?.inputValues?.saltInput1 == Array("foo".utf8))
        #expect(request.prf?.inputValues?.saltInput2 == Array("bar".utf8))
        #expect(request.hmacCreateSecret)
        #expect(request.largeBlob == SecurityKeyLargeBlobRegistrationInput(supportRequirement: .preferred))
    }

    @Test(arguments: [
        (SecurityKeyRegistrationExtensionOptions(largeBlob: "sometimes"), "--large-blob takes required or preferred."),
        (SecurityKeyRegistrationExtensionOptions(credProtect: "4"), "--cred-protect takes 1, 2, 3 or a WebAuthn policy name."),
        (SecurityKeyRegistrationExtensionOptions(enforceCredProtect: true), "--enforce-cred-protect needs --cred-protect."),
        (SecurityKeyRegistrationExtensionOptions(prfSalt: "Zm9v"), "--prf-salt needs --prf."),
        (SecurityKeyRegistrationExtensionOptions(prf: true, prfSalt2: "Zm9v"), "--prf-salt2 needs --prf-salt."),
    ])
    func registrationOptionsThatDoNotGoTogether(_ options: SecurityKeyRegistrationExtensionOptions, _ message: String) {
        let error = #expect(throws: SecurityKeyError.self) { try options.validate() }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == message)
    }

    @Test func assertionInputsAreParsedFromText() throws {
        // 32 bytes 00..1f in base16 (RFC 4648 §8), and "foo" in base64url.
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        let options = SecurityKeyAssertionExtensionOptions(
            hmacSalt: hex, credBlob: true, largeBlobWrite: "-_8", appID: "https://example.org/appid")
        try options.validate()
        var request = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
            .createCredentialAssertionRequest(challenge: [UInt8](repeating: 2, count: 32))
        request.allowedCredentials = [SecurityKeyCredentialDescriptor(credentialID: [9])]
        try options.apply(to: &request)
        #expect(request.hmacGetSecret?.salt1 == Array(0..<32))
        #expect(request.hmacGetSecret?.salt2 == nil)
        #expect(request.getCredentialBlob)
        #expect(request.largeBlob == .write([0xFB, 0xFF]))
        #expect(request.appID == "https://example.org/appid")
    }

    @Test func badValuesNameTheirOption() {
        var request = request()
        let blob = #expect(throws: SecurityKeyError.self) {
            try SecurityKeyRegistrationExtensionOptions(credBlob: "not base64!").apply(to: &request)
        }
        #expect(blob?.message == "--cred-blob takes base64 or base64url.")
        let second = #expect(throws: SecurityKeyError.self) {
            try SecurityKeyRegistrationExtensionOptions(prf: true, prfSalt: "Zm9v", prfSalt2: "%%").apply(to: &request)
        }
        #expect(second?.message == "--prf-salt2 takes base64 or base64url.")
        let salt = #expect(throws: SecurityKeyError.self) { try SecurityKeyHMACSecretInput.salt(text: "Zm9v", option: "--salt") }
        #expect(salt?.message == "--salt takes a 32-byte salt as 64 hex digits, base64 or base64url.")
        let both = #expect(throws: SecurityKeyError.self) {
            try SecurityKeyAssertionExtensionOptions(prfSalt: "Zm9v", hmacSalt: "Zm9v").validate()
        }
        #expect(both?.message == "--prf-salt and --hmac-salt exclude each other.")
    }
}
