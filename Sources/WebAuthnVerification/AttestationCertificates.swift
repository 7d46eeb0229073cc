import CBOR
import CTAP2
import SwiftASN1
import X509

/// Reads the `x5c` array of an attestation statement into certificates.
enum AttestationCertificates {
    static func parse(_ statement: CBORMap) throws(WebAuthnVerificationError) -> [Certificate]? {
        guard let value = statement["x5c"] else { return nil }
        guard let items = value.arrayValue, !items.isEmpty else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The x5c of the attestation statement is not a non-empty array.")
        }
        var certificates: [Certificate] = []
        for item in items {
            guard let der = item.bytesValue else {
                throw WebAuthnVerificationError(
                    .verificationFailed, "An x5c entry of the attestation statement is not a byte string.")
            }
            do {
                certificates.append(try Certificate(derEncoded: der))
            } catch {
                throw WebAuthnVerificationError(
                    .invalidCertificate, "An attestation certificate is not valid DER X.509.",
                    underlying: error)
            }
        }
        return certificates
    }

    static func signatureKey(of certificate: Certificate) throws(WebAuthnVerificationError)
        -> SignaturePublicKey
    {
        guard let key = SignaturePublicKey(certificate.publicKey) else {
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm, "The attestation certificate's key type is not supported.")
        }
        return key
    }

    /// The id-fido-gen-ce-aaguid extension (FIDO Metadata; WebAuthn §8.2.1).
    static let aaguidExtension: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]

    /// WebAuthn §8.2.1 "Certificate Requirements for Packed Attestation Statements".
    static func checkPackedRequirements(
        _ certificate: Certificate, aaguid: AAGUID
    ) throws(WebAuthnVerificationError) {
        guard certificate.version == .v3 else {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The attestation certificate is not X.509 version 3.")
        }
        var country = false, organization = false, unit = false, commonName = false
        for rdn in certificate.subject {
            for attribute in rdn {
                switch attribute.type {
                case ASN1ObjectIdentifier.RDNAttributeType.countryName: country = true
                case ASN1ObjectIdentifier.RDNAttributeType.organizationName: organization = true
                case ASN1ObjectIdentifier.RDNAttributeType.commonName: commonName = true
                case ASN1ObjectIdentifier.RDNAttributeType.organizationalUnitName:
                    if String(attribute.value) == "Authenticator Attestation" { unit = true }
                default: break
                }
            }
        }
        guard country, organization, unit, commonName else {
            throw WebAuthnVerificationError(
                .invalidCertificate,
                "The attestation certificate's subject lacks C, O, CN or OU=\"Authenticator Attestation\".")
        }
        let constraints: BasicConstraints?
        do {
            constraints = try certificate.extensions.basicConstraints
        } catch {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The attestation certificate's basic constraints are malformed.",
                underlying: error)
        }
        guard case .some(.notCertificateAuthority) = constraints else {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The attestation certificate must have basic constraints with CA false.")
        }
        try checkAAGUIDExtension(certificate, aaguid: aaguid)
    }

    /// WebAuthn §8.2.1 / §8.3.1: an id-fido-gen-ce-aaguid extension, when present, is not
    /// critical and names the AAGUID of the authenticator data.
    static func checkAAGUIDExtension(_ certificate: Certificate, aaguid: AAGUID) throws(WebAuthnVerificationError) {
        guard let ext = certificate.extensions[oid: aaguidExtension] else { return }
        guard !ext.critical else {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The certificate's AAGUID extension must not be critical.")
        }
        // extnValue holds a DER OCTET STRING of the 16 AAGUID bytes.
        let value = Array(ext.value)
        guard value.count == 18, value[0] == 0x04, value[1] == 0x10 else {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The certificate's AAGUID extension is malformed.")
        }
        guard Array(value[2...]) == aaguid.bytes else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The certificate's AAGUID does not match the authenticator data.")
        }
    }

    /// WebAuthn §8.4, §8.8: the certificate's key is the credential public key.
    static func checkCredentialKey(_ certificate: Certificate, _ key: COSEKey) throws(WebAuthnVerificationError) {
        let certificateKey = try signatureKey(of: certificate)
        guard try key.verificationKey().spkiDERRepresentation == certificateKey.spkiDERRepresentation else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The attestation certificate's key is not the credential public key.")
        }
    }
}

/// The packed attestation statement format (WebAuthn §8.2).
enum PackedAttestation {
    static func verify(
        _ statement: CBORMap, authData: AuthenticatorData, credential: AttestedCredentialData,
        clientDataHash: [UInt8]
    ) throws(WebAuthnVerificationError) -> AttestationVerification {
        let r = StatementReader(statement, "packed attestation statement")
        if statement["ecdaaKeyId"] != nil {
            throw WebAuthnVerificationError(
                .unsupportedAttestationFormat, "ECDAA attestation is not supported.")
        }
        let algorithm = COSEAlgorithm(rawValue: try r.int("alg"))
        let signature = try r.bytes("sig")
        let signed = authData.bytes + clientDataHash
        if let certificates = try AttestationCertificates.parse(statement) {
            let leaf = certificates[0]
            try AttestationCertificates.signatureKey(of: leaf)
                .verifySignature(signature, for: signed, algorithm: algorithm)
            try AttestationCertificates.checkPackedRequirements(leaf, aaguid: credential.aaguid)
            return AttestationVerification(type: .basic, trustPath: certificates)
        }
        guard credential.credentialPublicKey.algorithm == algorithm else {
            throw WebAuthnVerificationError(
                .verificationFailed,
                "The self-attestation algorithm does not match the credential key's algorithm.")
        }
        try credential.credentialPublicKey.verifySignature(signature, for: signed, algorithm: algorithm)
        return AttestationVerification(type: .selfAttestation, trustPath: [])
    }
}

/// The fido-u2f attestation statement format (WebAuthn §8.6).
enum FIDOU2FAttestation {
    static func verify(
        _ statement: CBORMap, authData: AuthenticatorData, credential: AttestedCredentialData,
        clientDataHash: [UInt8]
    ) throws(WebAuthnVerificationError) -> AttestationVerification {
        let r = StatementReader(statement, "fido-u2f attestation statement")
        let signature = try r.bytes("sig")
        guard let certificates = try AttestationCertificates.parse(statement) else { throw r.missing("x5c") }
        guard certificates.count == 1 else {
            throw WebAuthnVerificationError(
                .verificationFailed, "A fido-u2f x5c must hold exactly one certificate.")
        }
        let key = try AttestationCertificates.signatureKey(of: certificates[0])
        guard case .p256 = key else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The fido-u2f attestation key is not on P-256.")
        }
        let coseKey = credential.credentialPublicKey
        guard coseKey.keyType == .ec2, coseKey.curve == .p256,
            let x = coseKey.parameters[COSEKey.Label.x]?.bytesValue, x.count == 32,
            let y = coseKey.parameters[COSEKey.Label.y]?.bytesValue, y.count == 32
        else {
            throw WebAuthnVerificationError(
                .verificationFailed, "A fido-u2f credential key must be an EC2 P-256 key.")
        }
        // verificationData = 0x00 ‖ rpIdHash ‖ clientDataHash ‖ credentialId ‖ publicKeyU2F
        let signed: [UInt8] =
            [0x00] + authData.rpIDHash + clientDataHash + credential.credentialID + [0x04] + x + y
        try key.verifySignature(signature, for: signed, algorithm: .es256)
        return AttestationVerification(type: .basic, trustPath: certificates)
    }
}
