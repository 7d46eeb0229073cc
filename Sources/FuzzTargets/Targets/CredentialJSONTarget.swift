import CBOR
import CTAP2
import SecurityKeys

extension FuzzTarget {
    /// The two-way WebAuthn PublicKeyCredential JSON codec (`PublicKeyCredentialJSON`): a
    /// RegistrationResponseJSON or AuthenticationResponseJSON read into its typed value, written
    /// back and read again. The first byte picks the document (bit 0: assertion) and how it is
    /// written (bit 1: with the attested key's members, or a null user handle; bit 2: with
    /// members beside the standard ones); the rest is the JSON text.
    ///
    /// Properties: a refusal names a reason; what is read carries the device URI given; what is
    /// written reads back, compact and pretty-printed, into the same value, and writing that
    /// value again gives the same text (the round trip is stable); the name-sorted form keeps
    /// every member.
    static let credentialJSON = FuzzTarget(
        "credential-json", "WebAuthn registration and authentication response JSON, read, written and read back"
    ) {
        bytes throws(FuzzPropertyViolation) in
        guard let selector = bytes.first else { return }
        let json = Array(bytes.dropFirst())
        let beside: [(String, JSONValue?)] =
            selector & 4 != 0 ? [("rpId", "example.org"), ("device", .string(deviceURI)), ("absent", nil)] : []
        if selector & 1 == 0 {
            try registrationRoundTrip(json, withKey: selector & 2 != 0, beside: beside)
        } else {
            try assertionRoundTrip(json, nullUserHandle: selector & 2 != 0, beside: beside)
        }
    }

    private static let deviceURI = "udp:fuzz"

    private static func registrationRoundTrip(
        _ json: [UInt8], withKey: Bool, beside: [(String, JSONValue?)]
    ) throws(FuzzPropertyViolation) {
        let first: SecurityKeyCredentialRegistration
        do {
            first = try PublicKeyCredentialJSON.registration(reading: json, deviceURI: deviceURI)
        } catch {
            return try expect(!error.message.isEmpty, "a registration refused without a reason")
        }
        try expect(first.deviceURI == deviceURI, "the device URI changed")
        // The attested key's members, as `register --json` adds them, are ignored by the reader.
        let attestedKey = withKey ? attestedKey(first.rawAttestationObject) : nil
        let written = PublicKeyCredentialJSON.registration(first, attestedKey: attestedKey, beside: beside)
        try checkRoundTrip(written, first) { (text) throws(WebAuthnJSONError) in
            try PublicKeyCredentialJSON.registration(reading: text, deviceURI: deviceURI)
        } write: {
            PublicKeyCredentialJSON.registration($0, attestedKey: attestedKey, beside: beside)
        }
    }

    private static func assertionRoundTrip(
        _ json: [UInt8], nullUserHandle: Bool, beside: [(String, JSONValue?)]
    ) throws(FuzzPropertyViolation) {
        let first: SecurityKeyCredentialAssertion
        do {
            first = try PublicKeyCredentialJSON.assertion(reading: json, deviceURI: deviceURI)
        } catch {
            return try expect(!error.message.isEmpty, "an assertion refused without a reason")
        }
        try expect(first.deviceURI == deviceURI, "the device URI changed")
        if let prf = first.prf { try expect(prf.first.bitCount == 256, "a PRF output that is not 32 bytes") }
        let absent: JSONValue? = nullUserHandle ? .null : nil
        let written = PublicKeyCredentialJSON.assertion(first, absentUserHandle: absent, beside: beside)
        try checkRoundTrip(written, first) { (text) throws(WebAuthnJSONError) in
            try PublicKeyCredentialJSON.assertion(reading: text, deviceURI: deviceURI)
        } write: {
            PublicKeyCredentialJSON.assertion($0, absentUserHandle: absent, beside: beside)
        }
    }

    /// `written` (the JSON of `value`) read back, compact and pretty, must give `value`, and
    /// written again the same text.
    private static func checkRoundTrip<Value: Equatable>(
        _ written: JSONValue, _ value: Value, read: ([UInt8]) throws(WebAuthnJSONError) -> Value,
        write: (Value) -> JSONValue
    ) throws(FuzzPropertyViolation) {
        let text = written.text()
        for form in [text, written.text(pretty: true), written.sortedMembers().text()] {
            let again: Value
            do { again = try read(Array(form.utf8)) } catch {
                throw FuzzPropertyViolation(description: "written JSON does not read back: \(error.message)")
            }
            try expect(again == value, "written JSON reads back into another value")
            try expect(write(again).text() == text, "writing the value read back gives other text")
        }
        guard case .object(let members) = written, case .object(let sorted) = written.sortedMembers() else {
            throw FuzzPropertyViolation(description: "a credential written as something else than an object")
        }
        try expect(
            Set(members.map(\.0)) == Set(sorted.map(\.0)) && members.count == sorted.count,
            "sorting the members lost or added some")
    }

    /// The members `register --json` adds to `response` from the parsed attestation object.
    private static func attestedKey(_ attestationObject: [UInt8]) -> PublicKeyCredentialJSON.AttestedKey? {
        guard let object = try? AttestationObject(cbor: attestationObject) else { return nil }
        let key = object.authData.attestedCredentialData?.credentialPublicKey
        return PublicKeyCredentialJSON.AttestedKey(
            authenticatorData: object.authData.bytes,
            publicKey: (try? key?.publicKey().spkiDERRepresentation) ?? [],
            algorithm: (key?.algorithm?.rawValue).map { Int($0) })
    }
}
