import SecurityKeys
import Testing

/// The WebAuthn JSON options parser against hostile and malformed documents: each is refused
/// with a typed error naming the member (WebAuthn L3 §5.1.8–9 member names and types).
struct WebAuthnJSONOptionsTests {
    /// A valid registration document with one member replaced by `override` (raw JSON).
    static func creation(_ member: String, _ override: String) -> String {
        var members = [
            "rp": #"{"id":"example.org","name":"Example"}"#,
            "user": #"{"id":"AQID","name":"alice","displayName":"Alice"}"#,
            "challenge": #""AAECAwQFBgcICQoLDA0ODw""#,
            "pubKeyCredParams": #"[{"type":"public-key","alg":-7}]"#,
        ]
        members[member] = override
        return "{" + members.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    static func jsonError(_ text: String) -> WebAuthnJSONError? {
        do {
            _ = try PublicKeyCredentialCreationOptionsJSON(json: Array(text.utf8))
            return nil
        } catch {
            #expect(error.code == .invalidRequest)
            return error.webAuthnJSONError
        }
    }

    @Test(arguments: [
        ("rp", "5", "rp", WebAuthnJSONError.Code.wrongType),
        ("rp", #"{"id":7}"#, "rp.id", .wrongType),
        ("user", #"{"id":"AQID","name":["a"]}"#, "user.name", .wrongType),
        ("user", #"{"name":"a"}"#, "user.id", .missingMember),
        ("user", #"{"id":"not base64!","name":"a"}"#, "user.id", .invalidValue),
        // 65 bytes: one more than a user handle may have (WebAuthn L3 §5.4.3).
        (
            "user", "{\"id\":\"\(String(repeating: "A", count: 87))\",\"name\":\"a\"}", "user.id",
            .invalidValue
        ),
        ("challenge", "123", "challenge", .wrongType),
        ("challenge", #""""#, "challenge", .invalidValue),
        ("pubKeyCredParams", #"{"alg":-7}"#, "pubKeyCredParams", .wrongType),
        ("pubKeyCredParams", #"[{"type":"public-key","alg":"-7"}]"#, "pubKeyCredParams[0].alg", .wrongType),
        (
            "pubKeyCredParams", #"[{"type":"public-key","alg":-7.5}]"#, "pubKeyCredParams[0].alg",
            .invalidValue
        ),
        ("pubKeyCredParams", #"[{"type":"other","alg":-7}]"#, "pubKeyCredParams", .invalidValue),
        ("timeout", #""60000""#, "timeout", .wrongType),
        ("excludeCredentials", #"[{"type":"public-key","id":5}]"#, "excludeCredentials[0].id", .wrongType),
        (
            "excludeCredentials", #"[{"type":"public-key","id":"AA","transports":[1]}]"#,
            "excludeCredentials[0].transports[0]", .wrongType
        ),
        (
            "authenticatorSelection", #"{"requireResidentKey":"yes"}"#,
            "authenticatorSelection.requireResidentKey", .wrongType
        ),
        ("attestation", "true", "attestation", .wrongType),
        ("extensions", #"{"credProps":"yes"}"#, "extensions.credProps", .wrongType),
        ("extensions", #"{"appid":1}"#, "extensions.appid", .wrongType),
    ])
    func wrongMembersAreNamed(
        _ member: String, _ value: String, _ path: String, _ code: WebAuthnJSONError.Code
    ) {
        let error = Self.jsonError(Self.creation(member, value))
        #expect(error?.code == code)
        #expect(error?.member == path)
    }

    @Test func missingRequiredMembersAreNamed() {
        #expect(Self.jsonError(#"{"rp":{},"challenge":"AA"}"#)?.member == "user")
        #expect(
            Self.jsonError(#"{"publicKey":{"rp":{},"user":{"id":"AA","name":"a"}}}"#)?.member
                == "publicKey.challenge")
    }

    @Test(arguments: [
        ("{", WebAuthnJSONError.Code.malformed),
        (#"{"rp":{},"rp":{}}"#, .malformed),  // duplicate member
        (#"{"a":1,}"#, .malformed),  // trailing comma
        (#"{"a":1} x"#, .malformed),  // trailing data
        (#"{"a":"\ud800"}"#, .malformed),  // lone surrogate
        (#"{"a":01}"#, .malformed),  // leading zero
        ("{\"a\":\"\u{01}\"}", .malformed),  // raw control character
        ("[1]", .wrongType),  // not an object
    ])
    func malformedDocumentsAreRefused(_ text: String, _ code: WebAuthnJSONError.Code) {
        #expect(Self.jsonError(text)?.code == code)
    }

    @Test func invalidUTF8IsRefused() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(throws: SecurityKeyError.self) { try PublicKeyCredentialCreationOptionsJSON(json: bytes) }
    }

    @Test func deepNestingIsRefusedBeforeRecursingFurther() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let error = Self.jsonError("{\"rp\":\(deep)}")
        #expect(error?.code == .tooDeep)
    }

    @Test func hugeInputsAreRefused() {
        let huge = Self.creation("rp", "{\"name\":\"\(String(repeating: "x", count: 300_000))\"}")
        #expect(Self.jsonError(huge)?.code == .tooLarge)
        let longString = Self.creation("rp", "{\"name\":\"\(String(repeating: "x", count: 20_000))\"}")
        #expect(Self.jsonError(longString)?.code == .tooLarge)
        let manyEntries = Self.creation(
            "hints", "[" + Array(repeating: "\"x\"", count: 2000).joined(separator: ",") + "]")
        #expect(Self.jsonError(manyEntries)?.code == .tooLarge)
    }

    @Test func optionsBecomeTheProviderRequest() throws {
        // Members as WebAuthn L3 §5.4 defines them; requireResidentKey counts when residentKey is absent.
        let text = #"""
            {"publicKey":{"rp":{"name":"Example"},"user":{"id":"AQID","name":"alice","displayName":"Alice"},
            "challenge":"AAECAwQFBgcICQoLDA0ODw","pubKeyCredParams":[{"type":"x","alg":-1},{"type":"public-key","alg":-8}],
            "timeout":60000,"excludeCredentials":[{"type":"public-key","id":"_-8","transports":["usb"]}],
            "authenticatorSelection":{"requireResidentKey":true,"userVerification":"required"},
            "attestation":"direct","hints":["security-key"],"extensions":{"credProps":true,"unknownExt":[1]}}}
            """#
        let options = try PublicKeyCredentialCreationOptionsJSON(json: Array(text.utf8))
        let request = try options.registrationRequest(
            origin: "https://login.example.org", topOrigin: "https://example.org")
        #expect(request.relyingPartyIdentifier == "login.example.org")
        #expect(request.userID == [1, 2, 3])
        #expect(request.challenge == Array(0...15))
        #expect(request.credentialParameters.map(\.rawValue) == [-8])
        #expect(
            request.excludedCredentials == [
                SecurityKeyCredentialDescriptor(credentialID: [0xFF, 0xEF], transports: [.usb])
            ])
        #expect(request.residentKeyPreference == .required)
        #expect(request.userVerificationPreference == .required)
        #expect(request.attestationPreference == .direct)
        #expect(request.timeout == .seconds(60))
        #expect(
            request.clientData
                == .origin("https://login.example.org", crossOrigin: true, topOrigin: "https://example.org"))
        #expect(options.hints == ["security-key"])
        #expect(options.extensions.inputs["credProps"] == .bool(true))
    }

    @Test func requestOptionsCarryAllowListAndAppID() throws {
        let text =
            #"{"challenge":"AAECAw","rpId":"example.org","allowCredentials":[{"type":"public-key","id":"AQ"}],"userVerification":"discouraged","extensions":{"appid":"https://example.org/app-id.json"}}"#
        let options = try PublicKeyCredentialRequestOptionsJSON(json: Array(text.utf8))
        let request = try options.assertionRequest(origin: "https://example.org")
        #expect(request.allowedCredentials.map(\.credentialID) == [[1]])
        #expect(request.userVerificationPreference == .discouraged)
        #expect(request.appID == "https://example.org/app-id.json")
        #expect(request.clientData == .origin("https://example.org"))
    }

    @Test func platformOnlyRegistrationIsNotHandled() throws {
        let options = try PublicKeyCredentialCreationOptionsJSON(
            json: Array(
                Self.creation("authenticatorSelection", #"{"authenticatorAttachment":"platform"}"#).utf8))
        #expect(throws: SecurityKeyError.self) {
            try options.registrationRequest(origin: "https://example.org")
        }
    }
}
