import CBOR
import CTAP2
import Crypto
import SwiftASN1
import WebAuthnVerification
import X509

/// The attestation-object target's second pass: a statement re-signed by a key the harness
/// holds, so that the checks a verifier makes after the signature (certificate requirements,
/// the Android key description, the AIK's extensions) run on every input, not only on the
/// vectors' few real registrations.
///
/// The first certificate of x5c is rebuilt with the harness's P-256 key (its version, serial,
/// validity, names and extensions kept, then edited as the statement's `fuzz-edits` bits say)
/// and the statement's signature is made again over what its format signs. For android-key the
/// credential public key in authData becomes the harness's key too, as §8.4 wants them equal.
/// `fuzz-edits` and `fuzz-key-description` are the harness's own statement fields; no format
/// has them, and they are removed before verifying.
enum AttestationResigning {
    /// The statement field with the edit bits (an unsigned integer), see ``Edit``.
    static let editsField = "fuzz-edits"
    /// The statement field whose bytes replace the Android key description extension's value.
    static let keyDescriptionField = "fuzz-key-description"

    /// Edits of the rebuilt certificate, one bit each.
    struct Edit: OptionSet {
        let rawValue: Int
        /// X.509 version 1, without extensions.
        static let version1 = Edit(rawValue: 1 << 0)
        /// An empty subject becomes the issuer's name, another one empty.
        static let swapSubject = Edit(rawValue: 1 << 1)
        static let dropSubjectAlternativeName = Edit(rawValue: 1 << 2)
        static let dropExtendedKeyUsage = Edit(rawValue: 1 << 3)
        /// Basic constraints saying CA true.
        static let certificateAuthority = Edit(rawValue: 1 << 4)
        static let dropBasicConstraints = Edit(rawValue: 1 << 5)
        static let criticalAAGUID = Edit(rawValue: 1 << 6)
        /// An AAGUID extension whose value is not a 16-byte OCTET STRING.
        static let malformedAAGUID = Edit(rawValue: 1 << 7)
        /// An AAGUID extension naming another AAGUID (added when there is none).
        static let otherAAGUID = Edit(rawValue: 1 << 8)
        /// Subject alternative name, extended key usage and basic constraints holding a NULL.
        static let malformedExtensions = Edit(rawValue: 1 << 9)
        static let dropKeyDescription = Edit(rawValue: 1 << 10)
        static let dropAppleNonce = Edit(rawValue: 1 << 11)
        /// An Apple nonce extension that is DER but not SEQUENCE { [1] { OCTET STRING } }.
        static let emptyAppleNonce = Edit(rawValue: 1 << 12)
        /// An Apple nonce extension that is not DER.
        static let malformedAppleNonce = Edit(rawValue: 1 << 13)
    }

    /// The harness's attestation key (a fixed scalar).
    static let key: P256.Signing.PrivateKey? = try? P256.Signing.PrivateKey(
        rawRepresentation: [UInt8](repeating: 0x2B, count: 32))

    /// The formats whose statements carry a signature by x5c's first certificate, and apple, whose
    /// certificate carries a nonce over authData and the clientDataHash.
    static let formats: Set<AttestationFormat> = [.packed, .fidoU2F, .tpm, .androidKey, .apple]

    /// The Apple nonce extension's OID (1.2.840.113635.100.8.2, WebAuthn §8.8).
    static let appleNonceOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    /// `object` with its statement re-signed by ``key``, or nil when it has no x5c certificate
    /// (or no attested credential) to rebuild.
    static func resign(_ object: AttestationObject, clientDataHash: [UInt8]) -> AttestationObject? {
        guard let key, formats.contains(object.format),
            let credential = object.authData.attestedCredentialData
        else { return nil }
        var statement = object.attestationStatement
        let edits = Edit(rawValue: statement[editsField]?.intValue ?? 0)
        let keyDescription = statement[keyDescriptionField]?.bytesValue
        statement[editsField] = nil
        statement[keyDescriptionField] = nil
        var authData = object.authData
        // android-key and apple want the certificate's key to be the credential's (§8.4, §8.8).
        if object.format == .androidKey || object.format == .apple {
            guard let replaced = replacingCredentialKey(authData, credential, with: harnessCOSEKey(key))
            else {
                return nil
            }
            authData = replaced
        }
        let nonce = Array(SHA256.hash(data: authData.bytes + clientDataHash))
        guard let x5c = statement["x5c"]?.arrayValue, let first = x5c.first?.bytesValue,
            let original = try? Certificate(derEncoded: first),
            let leaf = try? rebuilt(
                original, edits: edits, keyDescription: keyDescription,
                appleNonce: object.format == .apple ? nonce : nil),
            let leafDER = try? encoded(leaf)
        else { return nil }
        statement["x5c"] = .array([.byteString(leafDER)] + x5c.dropFirst())
        let signed: [UInt8]
        switch object.format {
        case .fidoU2F:
            let x = credential.credentialPublicKey.parameters[COSEKey.Label.x]?.bytesValue ?? []
            let y = credential.credentialPublicKey.parameters[COSEKey.Label.y]?.bytesValue ?? []
            signed = [0x00] + authData.rpIDHash + clientDataHash + credential.credentialID + [0x04] + x + y
        case .apple:
            return AttestationObject(
                format: object.format, authData: authData, attestationStatement: statement)
        case .tpm:
            guard let certInfo = statement["certInfo"]?.bytesValue else { return nil }
            signed = certInfo
            statement["alg"] = .int(COSEAlgorithm.es256.rawValue)
        default:
            signed = authData.bytes + clientDataHash
            statement["alg"] = .int(COSEAlgorithm.es256.rawValue)
        }
        guard let signature = try? key.signature(for: signed) else { return nil }
        statement["sig"] = .byteString(Array(signature.derRepresentation))
        return AttestationObject(format: object.format, authData: authData, attestationStatement: statement)
    }

    /// Whether re-signing with ES256 keeps what the original statement's algorithm hashed (tpm's
    /// extraData is the hash its algorithm names).
    static func keepsDigest(_ object: AttestationObject) -> Bool {
        guard let alg = object.attestationStatement["alg"]?.intValue else { return true }
        return [COSEAlgorithm.es256, .rs256, .ps256, .esp256].map(\.rawValue).contains(alg)
    }

    /// Whether the statement asks for no edit of the rebuilt certificate.
    static func isUnedited(_ object: AttestationObject) -> Bool {
        object.attestationStatement[editsField] == nil
            && object.attestationStatement[keyDescriptionField] == nil
    }

    private static func rebuilt(
        _ original: Certificate, edits: Edit, keyDescription: [UInt8]?, appleNonce: [UInt8]?
    ) throws -> Certificate? {
        guard let key else { return nil }
        var extensions = Array(original.extensions)
        func remove(_ oid: ASN1ObjectIdentifier) { extensions.removeAll { $0.oid == oid } }
        func set(_ oid: ASN1ObjectIdentifier, critical: Bool, _ value: [UInt8]) {
            if let index = extensions.firstIndex(where: { $0.oid == oid }) {
                extensions[index] = Certificate.Extension(oid: oid, critical: critical, value: value[...])
            } else {
                extensions.append(Certificate.Extension(oid: oid, critical: critical, value: value[...]))
            }
        }
        let oids = ASN1ObjectIdentifier.X509ExtensionID.self
        let aaguidOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]
        if edits.contains(.dropSubjectAlternativeName) { remove(oids.subjectAlternativeName) }
        if edits.contains(.dropExtendedKeyUsage) { remove(oids.extendedKeyUsage) }
        if edits.contains(.dropBasicConstraints) { remove(oids.basicConstraints) }
        if edits.contains(.certificateAuthority) {
            let ca = try Certificate.Extension(
                BasicConstraints.isCertificateAuthority(maxPathLength: nil), critical: true)
            set(oids.basicConstraints, critical: true, Array(ca.value))
        }
        if edits.contains(.otherAAGUID) {
            set(aaguidOID, critical: false, [0x04, 0x10] + [UInt8](repeating: 0xEE, count: 16))
        }
        if edits.contains(.malformedAAGUID) {
            set(aaguidOID, critical: false, [0x04, 0x0F] + [UInt8](repeating: 0xEE, count: 15))
        }
        if edits.contains(.criticalAAGUID), let ext = extensions.first(where: { $0.oid == aaguidOID }) {
            set(aaguidOID, critical: true, Array(ext.value))
        }
        if edits.contains(.malformedExtensions) {
            for oid in [oids.subjectAlternativeName, oids.extendedKeyUsage, oids.basicConstraints] {
                set(oid, critical: false, [0x05, 0x00])
            }
        }
        if edits.contains(.dropKeyDescription) { remove(AndroidKeyDescription.extensionOID) }
        if let keyDescription { set(AndroidKeyDescription.extensionOID, critical: false, keyDescription) }
        if let appleNonce {
            // SEQUENCE { [1] EXPLICIT OCTET STRING nonce }
            set(appleNonceOID, critical: false, [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + appleNonce)
        }
        if edits.contains(.emptyAppleNonce) { set(appleNonceOID, critical: false, [0x30, 0x00]) }
        if edits.contains(.malformedAppleNonce) { set(appleNonceOID, critical: false, [0x30, 0x05, 0x01]) }
        if edits.contains(.dropAppleNonce) { remove(appleNonceOID) }
        var subject = original.subject
        if edits.contains(.swapSubject) { subject = subject.isEmpty ? original.issuer : DistinguishedName() }
        let version1 = edits.contains(.version1)
        return try Certificate(
            version: version1 ? .v1 : original.version, serialNumber: original.serialNumber,
            publicKey: Certificate.PublicKey(key.publicKey), notValidBefore: original.notValidBefore,
            notValidAfter: original.notValidAfter, issuer: original.issuer, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: version1 ? Certificate.Extensions() : try Certificate.Extensions(extensions),
            issuerPrivateKey: Certificate.PrivateKey(key))
    }

    private static func encoded(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// The harness key as a COSE EC2 key (canonical key order 1, 3, -1, -2, -3).
    private static func harnessCOSEKey(_ key: P256.Signing.PrivateKey) -> [UInt8] {
        let xy = Array(key.publicKey.rawRepresentation)
        return CBOREncoder.encode(
            .map([
                .unsigned(1): .unsigned(2), .unsigned(3): .int(COSEAlgorithm.es256.rawValue),
                .negative(0): .unsigned(1),
                .negative(1): .byteString(Array(xy[..<32])), .negative(2): .byteString(Array(xy[32...])),
            ]))
    }

    /// authData with the attested credential's public key replaced by `coseKey`, when the key
    /// stands in authData as it encodes (true of what the strict decoder accepted).
    private static func replacingCredentialKey(
        _ authData: AuthenticatorData, _ credential: AttestedCredentialData, with coseKey: [UInt8]
    ) -> AuthenticatorData? {
        let bytes = authData.bytes
        let start = 55 + credential.credentialID.count
        let old = credential.credentialPublicKey.cborEncoded
        guard bytes.count >= start + old.count, Array(bytes[start..<(start + old.count)]) == old else {
            return nil
        }
        return try? AuthenticatorData(
            bytes: Array(bytes[..<start]) + coseKey + Array(bytes[(start + old.count)...]))
    }
}
