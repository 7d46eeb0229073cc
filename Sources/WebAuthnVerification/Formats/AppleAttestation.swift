import CBOR
import CTAP2
import Crypto
import SwiftASN1
import X509

/// The Apple anonymous attestation statement format (WebAuthn §8.8).
enum AppleAttestation {
    /// The nonce extension's OID, 1.2.840.113635.100.8.2.
    static let nonceExtension: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    static func verify(
        _ statement: CBORMap, authData: AuthenticatorData, credential: AttestedCredentialData,
        clientDataHash: [UInt8]
    ) throws(WebAuthnVerificationError) -> AttestationVerification {
        let r = StatementReader(statement, "apple attestation statement")
        guard let certificates = try AttestationCertificates.parse(statement) else { throw r.missing("x5c") }
        let leaf = certificates[0]
        let nonce = Array(SHA256.hash(data: authData.bytes + clientDataHash))
        guard let ext = leaf.extensions[oid: nonceExtension] else {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The Apple attestation certificate lacks its nonce extension.")
        }
        guard try nonceValue(Array(ext.value)) == nonce else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The Apple attestation nonce is not the hash of authData and clientDataHash.")
        }
        try AttestationCertificates.checkCredentialKey(leaf, credential.credentialPublicKey)
        return AttestationVerification(type: .anonCA, trustPath: certificates)
    }

    /// The nonce in the extension value: SEQUENCE { [1] EXPLICIT OCTET STRING }.
    static func nonceValue(_ der: [UInt8]) throws(WebAuthnVerificationError) -> [UInt8] {
        let malformed = WebAuthnVerificationError(
            .malformedInput, "The Apple attestation nonce extension is malformed.")
        do {
            let root = try DER.parse(der)
            guard root.identifier == .sequence, case .constructed(let items) = root.content,
                let tagged = items.first(where: { _ in true }),
                tagged.identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific),
                case .constructed(let inner) = tagged.content, let octets = inner.first(where: { _ in true }),
                octets.identifier == .octetString, case .primitive(let nonce) = octets.content
            else { throw malformed }
            return Array(nonce)
        } catch let error as WebAuthnVerificationError {
            throw error
        } catch {
            throw WebAuthnVerificationError(
                .malformedInput, "The Apple attestation nonce extension is not valid DER.", underlying: error)
        }
    }
}
