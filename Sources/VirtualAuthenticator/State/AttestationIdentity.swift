import _SecurityKeyInternals
import Crypto
import FoundationEssentials
import SwiftASN1
import X509

/// Makes the attestation identity of a new state: a self-signed root CA and an attestation
/// certificate that follows WebAuthn §8.2.1 "Packed Attestation Statement Certificate
/// Requirements", issued by that root. The root's private key is discarded once it has signed.
enum AttestationIdentity {
    /// id-fido-gen-ce-aaguid (WebAuthn §8.2.1).
    static let aaguidExtensionOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]
    static let organization = "securitykey Virtual Authenticator"

    /// A fresh state: random secrets, the given AAGUID, a new attestation chain and, for an
    /// enterprise-attestation-capable key, an enterprise attestation certificate from the same root.
    static func newState(aaguid: [UInt8], enterpriseAttestation: Bool = false) throws(VirtualKeyError)
        -> VirtualKeyState
    {
        let attestationKey = P256.Signing.PrivateKey()
        let enterpriseKey = enterpriseAttestation ? P256.Signing.PrivateKey() : nil
        let chain = try makeCertificates(
            aaguid: aaguid, attestationKey: attestationKey, enterpriseKey: enterpriseKey)
        var state = VirtualKeyState(
            aaguid: aaguid, wrappingKey: SystemRandom.bytes(32),
            attestationKey: Array(attestationKey.rawRepresentation),
            attestationCertificate: chain.leaf, rootCertificate: chain.root,
            signatureCounter: 0, credentialCounters: [:], credentials: [], nextSequence: 0)
        if let enterpriseKey, let certificate = chain.enterpriseLeaf {
            state.enterpriseAttestation = EnterpriseAttestationIdentity(
                key: Array(enterpriseKey.rawRepresentation), certificate: certificate,
                rootCertificate: chain.root)
        }
        return state
    }

    /// An enterprise attestation identity for a state made before the key was enterprise
    /// attestation capable. The state's root key is gone, so a new root issues it.
    static func newEnterpriseIdentity(aaguid: [UInt8]) throws(VirtualKeyError)
        -> EnterpriseAttestationIdentity
    {
        let enterpriseKey = P256.Signing.PrivateKey()
        let chain = try makeCertificates(
            aaguid: aaguid, attestationKey: P256.Signing.PrivateKey(), enterpriseKey: enterpriseKey)
        guard let certificate = chain.enterpriseLeaf else {
            throw VirtualKeyError(.crypto, "Creating the enterprise attestation certificate failed.")
        }
        return EnterpriseAttestationIdentity(
            key: Array(enterpriseKey.rawRepresentation), certificate: certificate, rootCertificate: chain.root
        )
    }

    static func makeCertificates(
        aaguid: [UInt8], attestationKey: P256.Signing.PrivateKey,
        enterpriseKey: P256.Signing.PrivateKey? = nil
    ) throws(VirtualKeyError) -> (root: [UInt8], leaf: [UInt8], enterpriseLeaf: [UInt8]?) {
        do {
            let rootKey = P256.Signing.PrivateKey()
            let now = Date()
            let notBefore = now.addingTimeInterval(-86_400)
            // Far in the future: a fixed state file checked into CI must keep working for years.
            let notAfter = now.addingTimeInterval(30 * 365 * 86_400)
            let hex = aaguid.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined()
            let rootName = try DistinguishedName {
                CountryName("US")
                OrganizationName(organization)
                CommonName("securitykey Virtual Authenticator Root CA \(hex.prefix(8))")
            }
            let rootCertificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(),
                publicKey: .init(rootKey.publicKey), notValidBefore: notBefore, notValidAfter: notAfter,
                issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    SubjectKeyIdentifier(hash: Certificate.PublicKey(rootKey.publicKey))
                },
                issuerPrivateKey: .init(rootKey))
            var aaguidSerializer = DER.Serializer()
            try aaguidSerializer.serialize(ASN1OctetString(contentBytes: aaguid[...]))
            let aaguidValue = aaguidSerializer.serializedBytes
            func leaf(_ key: P256.Signing.PrivateKey, _ subject: DistinguishedName) throws -> Certificate {
                try Certificate(
                    version: .v3, serialNumber: Certificate.SerialNumber(),
                    publicKey: .init(key.publicKey), notValidBefore: notBefore, notValidAfter: notAfter,
                    issuer: rootName, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
                    extensions: try Certificate.Extensions {
                        Critical(BasicConstraints.notCertificateAuthority)
                        Certificate.Extension(
                            oid: aaguidExtensionOID, critical: false, value: aaguidValue[...])
                    },
                    issuerPrivateKey: .init(rootKey))
            }
            let leafName = try DistinguishedName {
                CountryName("US")
                OrganizationName(organization)
                OrganizationalUnitName("Authenticator Attestation")
                // X.520 caps a common name at 64 characters.
                CommonName("securitykey Virtual Key \(hex)")
            }
            let leafCertificate = try leaf(attestationKey, leafName)
            var enterpriseCertificate: Certificate?
            if let enterpriseKey {
                // An enterprise attestation identifies this one key (CTAP 2.1 §7.1): the
                // common name carries a serial number no other key shares (the AAGUID is in
                // the extension; WebAuthn §8.2.1 fixes the OU).
                let serial = Hex.encode(SystemRandom.bytes(8))
                let enterpriseName = try DistinguishedName {
                    CountryName("US")
                    OrganizationName(organization)
                    OrganizationalUnitName("Authenticator Attestation")
                    CommonName("securitykey Virtual Key EA \(serial)")
                }
                enterpriseCertificate = try leaf(enterpriseKey, enterpriseName)
            }
            return (try der(rootCertificate), try der(leafCertificate), try enterpriseCertificate.map(der))
        } catch let error as VirtualKeyError {
            throw error
        } catch {
            throw VirtualKeyError(.crypto, "Creating the attestation certificates failed.", underlying: error)
        }
    }

    private static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// PEM text of a DER certificate.
    static func pem(_ der: [UInt8]) -> String {
        PEMDocument(type: "CERTIFICATE", derBytes: der).pemString
    }
}
