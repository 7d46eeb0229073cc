import CBOR
import CTAP2
import Crypto
import SwiftASN1
import X509

/// The tpm attestation statement format (WebAuthn §8.3).
enum TPMAttestation {
    /// tcg-kp-AIKCertificate (TPMv2-EK-Profile; WebAuthn §8.3.1).
    static let aikCertificateUsage: ASN1ObjectIdentifier = [2, 23, 133, 8, 3]
    /// tcg-at-tpmManufacturer, tcg-at-tpmModel, tcg-at-tpmVersion (TPMv2-EK-Profile §3.2.9).
    static let manufacturerAttribute: ASN1ObjectIdentifier = [2, 23, 133, 2, 1]
    static let modelAttribute: ASN1ObjectIdentifier = [2, 23, 133, 2, 2]
    static let versionAttribute: ASN1ObjectIdentifier = [2, 23, 133, 2, 3]

    static func verify(
        _ statement: CBORMap, authData: AuthenticatorData, credential: AttestedCredentialData,
        clientDataHash: [UInt8]
    ) throws(WebAuthnVerificationError) -> AttestationVerification {
        let r = StatementReader(statement, "tpm attestation statement")
        guard let version = statement["ver"] else { throw r.missing("ver") }
        guard version.stringValue == "2.0" else {
            throw WebAuthnVerificationError(.verificationFailed, "The tpm attestation statement's ver is not \"2.0\".")
        }
        let algorithm = COSEAlgorithm(rawValue: try r.int("alg"))
        let signature = try r.bytes("sig")
        let pubArea = try TPMTPublic(bytes: try r.bytes("pubArea"))
        let certInfoBytes = try r.bytes("certInfo")
        let certInfo = try TPMSAttest(bytes: certInfoBytes)
        if statement["ecdaaKeyId"] != nil {
            throw WebAuthnVerificationError(.unsupportedAttestationFormat, "ECDAA attestation is not supported.")
        }

        // The public key in pubArea is the credential public key.
        try checkSameKey(pubArea, credential.credentialPublicKey)

        // certInfo: magic, type (checked while parsing), extraData, attested name.
        guard certInfo.magic == TPMSAttest.generatedValue else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The TPM attestation's magic is not TPM_GENERATED_VALUE.")
        }
        let attToBeSigned = authData.bytes + clientDataHash
        guard certInfo.extraData == (try Digests.hash(attToBeSigned, for: algorithm)) else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The TPM attestation's extraData is not the hash of authData and clientDataHash.")
        }
        guard let nameDigest = Digests.hash(pubArea: try pubAreaBytes(statement), with: pubArea.nameAlgorithm)
        else {
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm, "The TPM public area's name algorithm \(pubArea.nameAlgorithm) is not supported.")
        }
        let nameAlg = pubArea.nameAlgorithm.rawValue
        guard certInfo.attestedName == [UInt8(nameAlg >> 8), UInt8(nameAlg & 0xff)] + nameDigest else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The TPM attestation certifies another key than the public area's.")
        }

        guard let certificates = try AttestationCertificates.parse(statement) else { throw r.missing("x5c") }
        let aik = certificates[0]
        try AttestationCertificates.signatureKey(of: aik)
            .verifySignature(signature, for: certInfoBytes, algorithm: algorithm)
        try checkAIKRequirements(aik, aaguid: credential.aaguid)
        return AttestationVerification(type: .attCA, trustPath: certificates)
    }

    private static func pubAreaBytes(_ statement: CBORMap) throws(WebAuthnVerificationError) -> [UInt8] {
        try StatementReader(statement, "tpm attestation statement").bytes("pubArea")
    }

    /// WebAuthn §8.3 step "Verify that the public key specified by the parameters and unique
    /// fields of pubArea is identical to the credentialPublicKey".
    static func checkSameKey(_ pubArea: TPMTPublic, _ key: COSEKey) throws(WebAuthnVerificationError) {
        let mismatch = WebAuthnVerificationError(
            .verificationFailed, "The TPM public area holds another key than the credential public key.")
        switch pubArea.key {
        case .rsa(let exponent, let modulus):
            guard key.keyType == .rsa, let n = key.parameters[COSEKey.Label.modulus]?.bytesValue,
                let e = key.parameters[COSEKey.Label.exponent]?.bytesValue
            else { throw mismatch }
            // A zero exponent in TPMT_PUBLIC stands for the default 2^16 + 1.
            let expected = exponent == 0 ? 65537 : exponent
            guard e.count <= 4, e.reduce(UInt32(0), { $0 << 8 | UInt32($1) }) == expected,
                stripZeros(n) == stripZeros(modulus)
            else { throw mismatch }
        case .ecc(let curve, let x, let y):
            let coseCurve: COSECurve
            switch curve {
            case .nistP256: coseCurve = .p256
            case .nistP384: coseCurve = .p384
            case .nistP521: coseCurve = .p521
            default:
                throw WebAuthnVerificationError(
                    .unsupportedAlgorithm, "The TPM public area's curve \(curve.rawValue) is not supported.")
            }
            guard key.keyType == .ec2, key.curve == coseCurve,
                key.parameters[COSEKey.Label.x]?.bytesValue == x, key.parameters[COSEKey.Label.y]?.bytesValue == y
            else { throw mismatch }
        }
    }

    private static func stripZeros(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        bytes.drop { $0 == 0 }
    }

    /// WebAuthn §8.3.1 "TPM Attestation Statement Certificate Requirements".
    static func checkAIKRequirements(_ certificate: Certificate, aaguid: AAGUID) throws(WebAuthnVerificationError) {
        guard certificate.version == .v3 else {
            throw WebAuthnVerificationError(.invalidCertificate, "The AIK certificate is not X.509 version 3.")
        }
        guard certificate.subject.isEmpty else {
            throw WebAuthnVerificationError(.invalidCertificate, "The AIK certificate's subject is not empty.")
        }
        do {
            guard let names = try certificate.extensions.subjectAlternativeNames,
                names.contains(where: { name in
                    guard case .directoryName(let dn) = name else { return false }
                    let types = Set(dn.flatMap { rdn in rdn.map(\.type) })
                    return types.contains(manufacturerAttribute) && types.contains(modelAttribute)
                        && types.contains(versionAttribute)
                })
            else {
                throw WebAuthnVerificationError(
                    .invalidCertificate,
                    "The AIK certificate's subject alternative name lacks the TPM manufacturer, model or version.")
            }
            guard let usage = try certificate.extensions.extendedKeyUsage,
                usage.contains(ExtendedKeyUsage.Usage(oid: aikCertificateUsage))
            else {
                throw WebAuthnVerificationError(
                    .invalidCertificate, "The AIK certificate's extended key usage lacks tcg-kp-AIKCertificate.")
            }
            guard case .some(.notCertificateAuthority) = try certificate.extensions.basicConstraints else {
                throw WebAuthnVerificationError(
                    .invalidCertificate, "The AIK certificate must have basic constraints with CA false.")
            }
        } catch let error as WebAuthnVerificationError {
            throw error
        } catch {
            throw WebAuthnVerificationError(
                .invalidCertificate, "An extension of the AIK certificate is malformed.", underlying: error)
        }
        try AttestationCertificates.checkAAGUIDExtension(certificate, aaguid: aaguid)
    }
}

/// The digests the attestation formats name by COSE or TPM algorithm.
enum Digests {
    /// The hash the signature algorithm `algorithm` signs with (WebAuthn §8.3: extraData).
    static func hash(_ data: [UInt8], for algorithm: COSEAlgorithm) throws(WebAuthnVerificationError) -> [UInt8] {
        switch algorithm {
        case .rs1: return Array(Insecure.SHA1.hash(data: data))
        case .es256, .esp256, .rs256, .ps256: return Array(SHA256.hash(data: data))
        case .es384, .esp384, .rs384: return Array(SHA384.hash(data: data))
        case .es512, .esp512, .rs512: return Array(SHA512.hash(data: data))
        default:
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm, "The hash of \(algorithm) signatures is not known here.")
        }
    }

    /// The digest of a TPM public area under its name algorithm.
    static func hash(pubArea: [UInt8], with algorithm: TPMAlgorithm) -> [UInt8]? {
        switch algorithm {
        case .sha1: Array(Insecure.SHA1.hash(data: pubArea))
        case .sha256: Array(SHA256.hash(data: pubArea))
        case .sha384: Array(SHA384.hash(data: pubArea))
        case .sha512: Array(SHA512.hash(data: pubArea))
        default: nil
        }
    }
}
