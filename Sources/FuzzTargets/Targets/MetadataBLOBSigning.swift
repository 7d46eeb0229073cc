import _SecurityKeyInternals
import Crypto
import FoundationEssentials
import SwiftASN1
import X509

/// The mds-blob target's second pass: payload JSON signed by a key the harness holds, under a
/// chain to a root the harness makes, so that what follows the signature and chain checks
/// (reading the payload, the BLOB's fields, staleness) runs on small inputs, not only on the
/// real 4 MB BLOB of the vectors.
///
/// An input that starts with `{` is a payload (a JWS in compact form never does: its first
/// character is base64url): it becomes `BASE64URL(header) . BASE64URL(payload) . BASE64URL(r||s)`
/// with header `{"alg":"ES256","x5c":[leaf]}` (RFC 7515 §7.1, RFC 7518 §3.4).
enum MetadataBLOBSigning {
    /// The harness's root and signing keys (fixed scalars).
    static let rootKey = try? P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x3C, count: 32))
    static let signingKey = try? P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x4D, count: 32))

    /// The moment the harness chain is valid at (2024-09-01, the target's verification time).
    static let validFrom = Date(timeIntervalSince1970: 1_704_067_200)  // 2024-01-01
    static let validUntil = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    /// The self-signed root (CA, keyCertSign) and the signing certificate it issued; nil only if
    /// swift-certificates refuses to build them.
    static let chain: (root: Certificate, leaf: Certificate, leafDER: [UInt8])? = {
        guard let rootKey, let signingKey else { return nil }
        do {
            let rootName = try DistinguishedName { CommonName("securitykey fuzz MDS root") }
            let leafName = try DistinguishedName { CommonName("securitykey fuzz MDS signer") }
            let root = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(bytes: [1]),
                publicKey: Certificate.PublicKey(rootKey.publicKey), notValidBefore: validFrom,
                notValidAfter: validUntil, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true))
                },
                issuerPrivateKey: Certificate.PrivateKey(rootKey))
            let leaf = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(bytes: [2]),
                publicKey: Certificate.PublicKey(signingKey.publicKey), notValidBefore: validFrom,
                notValidAfter: validUntil, issuer: rootName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                },
                issuerPrivateKey: Certificate.PrivateKey(rootKey))
            var serializer = DER.Serializer()
            try serializer.serialize(leaf)
            return (root, leaf, serializer.serializedBytes)
        } catch {
            return nil
        }
    }()

    /// `payload` as a BLOB signed by the harness, or nil when the harness has no chain.
    static func signed(payload: [UInt8]) -> [UInt8]? {
        guard let chain, let signingKey else { return nil }
        let certificate = Base64.encode(chain.leafDER, alphabet: .standard, padded: true)
        let header = Array("{\"alg\":\"ES256\",\"x5c\":[\"\(certificate)\"]}".utf8)
        let signingInput = Array(
            (Base64.encode(header, alphabet: .url, padded: false) + "."
                + Base64.encode(payload, alphabet: .url, padded: false)).utf8)
        guard let signature = try? signingKey.signature(for: signingInput) else { return nil }
        return signingInput + Array(".".utf8)
            + Array(Base64.encode(Array(signature.rawRepresentation), alphabet: .url, padded: false).utf8)
    }
}
