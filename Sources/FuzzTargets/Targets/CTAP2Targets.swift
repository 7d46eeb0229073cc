import CBOR
import CTAP2

extension FuzzTarget {
    /// authenticatorGetInfo responses: what parses keeps its raw fields, and those fields
    /// re-encoded parse to the same info.
    static let getInfo = FuzzTarget("getinfo", "authenticatorGetInfo response (AuthenticatorInfo)") {
        bytes throws(FuzzPropertyViolation) in
        guard let info = try? AuthenticatorInfo(cbor: bytes) else { return }
        let again = try? AuthenticatorInfo(cbor: CBOREncoder.encode(.map(info.fields)))
        try expect(again == info, "getInfo fields re-encoded parse to another info")
    }

    /// authenticatorData: parsing consumes every byte and keeps them; the attested credential's
    /// COSE key re-encodes to a key that parses the same.
    static let authenticatorData = FuzzTarget(
        "authenticator-data", "authenticatorData (attested credential, extensions)"
    ) {
        bytes throws(FuzzPropertyViolation) in
        guard let data = try? AuthenticatorData(bytes: bytes) else { return }
        try expect(
            data.bytes == bytes && data.rpIDHash.count == 32, "authenticatorData does not keep its bytes")
        if let key = data.attestedCredentialData?.credentialPublicKey {
            try expect(
                (try? COSEKey(cbor: key.cborEncoded)) == key, "the credential's COSE key does not round trip")
        }
        try expect(
            (try? AuthenticatorData(bytes: data.bytes)) == data, "authenticatorData parses differently twice")
        // WebAuthn §6.1: UP is bit 0 of the flags byte (offset 32), UV bit 2.
        try expect(
            data.userPresent == (bytes[32] & 0x01 != 0) && data.userVerified == (bytes[32] & 0x04 != 0),
            "the UP/UV flags do not match the flags byte")
        // Replacing the AAGUID (bytes 37..<53, WebAuthn §6.5.2) changes those bytes only, and
        // the result parses to the same data with the new AAGUID.
        guard let aaguid = AAGUID(bytes: [UInt8](repeating: 0xA5, count: 16)) else {
            throw FuzzPropertyViolation(description: "a 16-byte AAGUID is refused")
        }
        guard let replaced = data.replacingAAGUID(with: aaguid) else {
            try expect(data.attestedCredentialData == nil, "an attested credential's AAGUID cannot be replaced")
            return
        }
        var expected = bytes
        expected.replaceSubrange(37..<53, with: aaguid.bytes)
        try expect(replaced.bytes == expected, "replacing the AAGUID changed other bytes")
        try expect(
            (try? AuthenticatorData(bytes: replaced.bytes)) == replaced
                && replaced.attestedCredentialData?.aaguid == aaguid
                && replaced.attestedCredentialData?.credentialID == data.attestedCredentialData?.credentialID,
            "authenticatorData with a replaced AAGUID does not parse to itself")
    }

    /// COSE keys: a key that parses re-encodes canonically to a key that parses the same, and
    /// turns into a swift-crypto key (EC2 P-256/384/521, OKP Ed25519, RSA) or a typed error;
    /// a key that converts exports to a SubjectPublicKeyInfo that converts back the same.
    static let coseKey = FuzzTarget("cose-key", "COSE_Key (RFC 9052) parsing, re-encoding and key conversion")
    {
        bytes throws(FuzzPropertyViolation) in
        guard let key = try? COSEKey(cbor: bytes) else { return }
        try expect((try? COSEKey(cbor: key.cborEncoded)) == key, "a COSE key does not round trip")
        try expect(!key.keyType.description.isEmpty, "a key type without a name")
        if let curve = key.curve { try expect(!curve.description.isEmpty, "a curve without a name") }
        guard let publicKey = try? key.publicKey() else { return }
        let spki = publicKey.spkiDERRepresentation
        try expect(
            !spki.isEmpty && !publicKey.kindName.isEmpty, "a converted key without a SubjectPublicKeyInfo")
        try expect(
            (try? key.publicKey())?.spkiDERRepresentation == spki, "a COSE key converts differently twice")
    }

    /// The response of every CTAP2 command with a body (makeCredential, getAssertion and
    /// getNextAssertion, clientPIN, credentialManagement, getInfo), each fed the same bytes;
    /// a makeCredential response's attestation object round trips.
    static let ctap2Responses = FuzzTarget("ctap2-responses", "CTAP2 responses of every command") {
        bytes throws(FuzzPropertyViolation) in
        if let response = try? MakeCredentialResponse(cbor: bytes) {
            let object = response.attestationObject
            let again = try? AttestationObject(cbor: object.cborEncoded)
            try expect(again == object, "a makeCredential response's attestation object does not round trip")
        }
        if let response = try? GetAssertionResponse(cbor: bytes) {
            try expect(
                (try? AuthenticatorData(bytes: response.authData.bytes)) == response.authData,
                "a getAssertion response's authData does not parse the same")
        }
        _ = try? ClientPINResponse(cbor: bytes)
        _ = try? CredentialManagementResponse(cbor: bytes)
        _ = try? AuthenticatorInfo(cbor: bytes)
    }
}
