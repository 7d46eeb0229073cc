import Testing
import SecurityKeys

/// Requests made from a command line's text: COSE algorithm identifiers from IANA's registry
/// (ES256 -7, EdDSA -8, RS256 -257), base64url per RFC 4648 §5, and the bounds WebAuthn puts on
/// user handles (1 to 64 bytes) and challenges (at least 16 bytes).
@Suite struct RequestOptionsTests {
    let options = SecurityKeyRequestOptions(
        relyingPartyIdentifier: "example.org", challenge: "AAECAwQFBgcICQoLDA0ODw", userVerification: .required,
        timeout: .seconds(30))

    @Test func aRegistrationIsMadeFromText() throws {
        let (request, userHandle) = try options.registrationRequest(
            SecurityKeyRequestOptions.Registration(
                user: "anne", userID: "AQID", resident: true, algorithms: ["es256,rs256", "-8"], attestation: "none",
                attestationFormats: ["packed"], excludedCredentials: ["-_8"]))
        #expect(userHandle == [1, 2, 3])
        #expect(request.userID == [1, 2, 3])
        #expect(request.name == "anne" && request.displayName == "anne")
        #expect(request.credentialParameters.map(\.rawValue) == [-7, -257, -8])
        #expect(request.excludedCredentials.map(\.credentialID) == [[0xFB, 0xFF]])
        #expect(request.residentKeyPreference == .required)
        #expect(request.userVerificationPreference == .required)
        #expect(request.attestationPreference == .none)
        #expect(request.attestationFormats == ["packed"])
        #expect(request.challenge == Array(0..<16))
        #expect(request.clientData == .origin("https://example.org"))
        #expect(request.timeout == .seconds(30))
    }

    @Test func defaultsAreRandomAndWebAuthns() throws {
        let plain = SecurityKeyRequestOptions(relyingPartyIdentifier: "example.org", timeout: .seconds(5))
        let (first, handle) = try plain.registrationRequest(SecurityKeyRequestOptions.Registration(user: "bob"))
        let (second, _) = try plain.registrationRequest(SecurityKeyRequestOptions.Registration(user: "bob"))
        #expect(handle.count == 16 && first.challenge.count == 32)
        #expect(first.challenge != second.challenge, "a fresh random challenge each time")
        #expect(first.credentialParameters.map(\.rawValue) == [-7, -8])
        #expect(first.residentKeyPreference == .discouraged)
    }

    @Test func aSignInAllowsTheCredentialsGivenOrSignsAHash() throws {
        let request = try options.assertionRequest(allowing: ["AQ", "Ag"])
        #expect(request.allowedCredentials.map(\.credentialID) == [[1], [2]])
        #expect(request.userVerificationPreference == .required)
        let hashed = SecurityKeyRequestOptions(
            relyingPartyIdentifier: "example.org", clientDataHash: String(repeating: "A", count: 43), timeout: .seconds(5))
        let (clientData, challenge) = try hashed.clientData()
        #expect(clientData == .hash([UInt8](repeating: 0, count: 32)))
        #expect(challenge.isEmpty)
    }

    @Test func badTextNamesItsOption() {
        let cases: [(() throws(SecurityKeyError) -> Void, String)] = [
            ({ () throws(SecurityKeyError) in
                _ = try SecurityKeyRequestOptions(relyingPartyIdentifier: "example.org", challenge: "AAEC", timeout: .seconds(5))
                    .clientData()
            }, "--challenge must be base64url of at least 16 bytes."),
            ({ () throws(SecurityKeyError) in
                _ = try options.registrationRequest(.init(user: "a", userID: String(repeating: "A", count: 88)))
            }, "--user-id must be base64url of 1 to 64 bytes."),
            ({ () throws(SecurityKeyError) in _ = try options.registrationRequest(.init(user: "a", algorithms: ["es999"])) },
             "Unknown algorithm \"es999\"; use es256, es384, es512, eddsa, rs256, ps256, es256k, mldsa65, mldsa87 or a COSE number."),
            ({ () throws(SecurityKeyError) in _ = try options.assertionRequest(allowing: ["not base64!"]) },
             "--credential takes a base64url credential ID, not \"not base64!\"."),
        ]
        for (body, message) in cases {
            let error = #expect(throws: SecurityKeyError.self) { try body() }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message == message)
        }
    }
}
