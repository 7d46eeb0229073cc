import Crypto
import Foundation
import SecurityKeys
import TestProcesses
import Testing

/// The provider's extension inputs and outputs that need no key: PRF salt derivation against
/// python-fido2, the PRF input rules, and the WebAuthn JSON of the outputs.
struct ExtensionTests {
    let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")

    static let inputs: [[UInt8]] = [[], Array("first".utf8), (0..<100).map { UInt8($0) }]

    /// python-fido2's `_prf_salt` (SHA-256 of "WebAuthn PRF" ‖ 0x00 ‖ input, WebAuthn L3
    /// §10.1.4) for the same inputs.
    static func pythonSalts(_ inputs: [[UInt8]]) async throws -> [String] {
        guard let python = TestProcess.pythonFIDO2 else { throw PythonMissing() }
        let script = """
            import sys
            from fido2.ctap2.extensions import _prf_salt
            for arg in sys.argv[1:]:
                print(_prf_salt(bytes.fromhex(arg[1:])).hex())
            """
        // A leading "x" keeps empty inputs as arguments.
        let output = try await TestProcess.run(
            python, ["-c", script] + inputs.map { "x" + $0.map { String(format: "%02x", $0) }.joined() })
        guard output.status == 0 else { throw PythonMissing() }
        return output.stdoutText.split(separator: "\n").map(String.init)
    }

    struct PythonMissing: Error {}

    @Test func prfSaltsMatchPythonFIDO2() async throws {
        let expected = try await Self.pythonSalts(Self.inputs)
        try #require(expected.count == Self.inputs.count)
        for (input, salt) in zip(Self.inputs, expected) {
            let values = SecurityKeyPRFAssertionInput.InputValues(saltInput1: input, saltInput2: input + [1])
            #expect(hex(values.salts.salt1) == salt)
            #expect(values.salts.salt2.map(hex) != salt)
        }
    }

    /// evalByCredential needs allowCredentials and may only name credentials on it (WebAuthn L3
    /// §10.1.4 client processing); refused before any key is looked for.
    @Test func prfByCredentialNeedsAnAllowList() async {
        let controller = SecurityKeyAuthorizationController(sources: [])
        let values = SecurityKeyPRFAssertionInput.InputValues(saltInput1: [1])
        var request = provider.createCredentialAssertionRequest(challenge: [1])
        request.timeout = .milliseconds(100)
        request.prf = SecurityKeyPRFAssertionInput(inputValues: nil, perCredentialInputValues: [[9]: values])
        let noList = await #expect(throws: SecurityKeyError.self) { try await controller.performAssertion(request) }
        #expect(noList?.code == .invalidRequest)
        request.allowedCredentials = [SecurityKeyCredentialDescriptor(credentialID: [8])]
        let notAllowed = await #expect(throws: SecurityKeyError.self) { try await controller.performAssertion(request) }
        #expect(notAllowed?.code == .invalidRequest)
        request.prf = nil
        request.hmacGetSecret = SecurityKeyHMACSecretInput(salt1: [UInt8](repeating: 0, count: 31))
        let shortSalt = await #expect(throws: SecurityKeyError.self) { try await controller.performAssertion(request) }
        #expect(shortSalt?.code == .invalidRequest)
    }

    /// The outputs appear in clientExtensionResults under their WebAuthn names, binary members
    /// base64url (checked with Foundation's base64, not this library's encoder).
    @Test func clientExtensionResultsUseWebAuthnNames() throws {
        let first = (0..<32).map { UInt8($0) }
        let second = (0..<32).map { UInt8(255 - $0) }
        var registration = SecurityKeyCredentialRegistration(
            credentialID: [1], rawAttestationObject: [], rawClientDataJSON: nil, transports: [], deviceURI: "x")
        registration.prf = SecurityKeyPRFRegistrationOutput(
            isSupported: true, first: SymmetricKey(data: first), second: SymmetricKey(data: second))
        registration.credentialProperties = SecurityKeyCredentialProperties(residentKey: false)
        registration.credentialBlobStored = true
        registration.hmacCreateSecret = true
        let created = try object(registration.clientExtensionResultsJSON)
        let prf = try #require(created["prf"] as? [String: Any])
        #expect(prf["enabled"] as? Bool == true)
        let results = try #require(prf["results"] as? [String: String])
        #expect(results["first"] == foundationBase64URL(first))
        #expect(results["second"] == foundationBase64URL(second))
        #expect((created["credProps"] as? [String: Bool])?["rk"] == false)
        #expect(created["credBlob"] as? Bool == true)
        #expect(created["hmacCreateSecret"] as? Bool == true)
        let whole = try object(registration.webAuthnJSON)
        #expect((whole["clientExtensionResults"] as? [String: Any])?.keys.sorted() == created.keys.sorted())

        var assertion = SecurityKeyCredentialAssertion(
            credentialID: [1], rawAuthenticatorData: [], signature: [], userID: nil, rawClientDataJSON: nil,
            appID: false, deviceURI: "x")
        assertion.hmacGetSecret = SecurityKeyHMACSecretOutput(output1: SymmetricKey(data: first))
        assertion.credentialBlob = [0xFF, 0xEE]
        let got = try object(assertion.clientExtensionResultsJSON)
        #expect((got["hmacGetSecret"] as? [String: String]) == ["output1": foundationBase64URL(first)])
        #expect(got["getCredBlob"] as? String == foundationBase64URL([0xFF, 0xEE]))
        #expect(got["prf"] == nil)
        // Secrets stay out of descriptions.
        #expect(!String(describing: assertion).contains(foundationBase64URL(first)))
        #expect(!String(describing: registration).contains("\(first.prefix(3).map(String.init))"))
    }

    func object(_ json: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    func foundationBase64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
