import CTAP2

extension FuzzTarget {
    /// CTAP1/U2F register and authenticate replies (FIDO U2F Raw Message Formats §4.3, §5.4),
    /// with and without their status word. A reply that parses is rebuilt byte for byte from
    /// its fields, and turns into the WebAuthn attestation object or authenticator data a CTAP2
    /// key would have returned (CTAP 2.1 §10.2), which parse back to the same fields.
    static let u2fResponses = FuzzTarget("u2f-responses", "CTAP1/U2F register and authenticate responses") {
        bytes throws(FuzzPropertyViolation) in
        let rpIDHash = [UInt8](repeating: 0x5A, count: 32)
        for data in [bytes, Array(bytes.dropLast(2))] {
            if let registration = try? U2FRegistrationResponse(data: data) {
                let rebuilt =
                    [U2FRegistrationResponse.reservedByte] + registration.userPublicKey
                    + [UInt8(registration.keyHandle.count)] + registration.keyHandle
                    + registration.attestationCertificate + registration.signature
                try expect(rebuilt == data, "a U2F registration does not rebuild to its bytes")
                try expect(
                    registration.signedData(challenge: rpIDHash, application: rpIDHash).count
                        == 1 + 64 + registration.keyHandle.count + 65,
                    "the U2F registration's signed data has the wrong length")
                if let object = try? registration.attestationObject(rpIDHash: rpIDHash) {
                    let credential = object.authData.attestedCredentialData
                    try expect(
                        credential?.credentialID == registration.keyHandle,
                        "the credential ID is not the key handle")
                    try expect(
                        (try? AttestationObject(cbor: object.cborEncoded)) == object,
                        "a U2F attestation object does not round trip")
                } else {
                    throw FuzzPropertyViolation(
                        description: "a parsed U2F registration has no attestation object")
                }
            }
            if let authentication = try? U2FAuthenticationResponse(data: data) {
                let rebuilt = [authentication.flags] + authentication.counterBytes + authentication.signature
                try expect(rebuilt == data, "a U2F authentication does not rebuild to its bytes")
                // CTAP 2.1 §10.3: bits 0 and 1 of the presence byte become the flags, the rest
                // are cleared, so every well-formed reply converts.
                guard let authData = try? authentication.authenticatorData(rpIDHash: rpIDHash) else {
                    throw FuzzPropertyViolation(description: "a U2F authentication without authenticator data")
                }
                try expect(
                    authData.signCount == authentication.counter && authData.bytes.count == 37
                        && authData.flags.rawValue == authentication.flags & 0x03,
                    "a U2F authentication's authenticator data does not keep its counter and UP bit")
                try expect(
                    authentication.signedData(challenge: rpIDHash, application: rpIDHash).count == 32 + 1 + 4
                        + 32,
                    "the U2F authentication's signed data has the wrong length")
                _ = authentication.userPresent
            }
        }
        // Whole replies: a status other than 9000 is a typed error with a description.
        do throws(CTAP2Error) {
            _ = try U2FRegistrationResponse(reply: bytes)
        } catch {
            try expect(!error.description.isEmpty, "a U2F registration error without a description")
        }
        do throws(CTAP2Error) {
            _ = try U2FAuthenticationResponse(reply: bytes)
        } catch {
            try expect(!error.description.isEmpty, "a U2F authentication error without a description")
        }
        if bytes.count >= 2 {
            _ = U2FStatusWord(sw1: bytes[bytes.count - 2], sw2: bytes[bytes.count - 1]).description
        }
    }
}
