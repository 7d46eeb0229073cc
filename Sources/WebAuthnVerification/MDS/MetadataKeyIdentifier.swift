import Crypto
import SwiftASN1
import X509

/// The attestation certificate key identifier MDS lists U2F models by (FIDO MDS3 §3.1.1
/// `attestationCertificateKeyIdentifiers`): the SHA-1 of the certificate's subjectPublicKey
/// bit string (RFC 5280 §4.2.1.2 method 1), computed rather than read from the certificate,
/// because many U2F attestation certificates carry no Subject Key Identifier extension.
public enum MetadataKeyIdentifier {
    /// The identifier of `certificate`, lowercase hex; nil if its key cannot be re-read.
    public static func of(_ certificate: Certificate) -> String? {
        guard let spki = try? certificate.publicKey.serializeAsPEM().derBytes,
            let root = try? DER.parse(spki),
            let bits = try? DER.sequence(
                root, identifier: .sequence,
                { nodes -> ASN1BitString in
                    guard nodes.next() != nil else {
                        throw ASN1Error.invalidASN1Object(reason: "no algorithm")
                    }
                    return try ASN1BitString(derEncoded: &nodes)
                })
        else { return nil }
        let digest = Insecure.SHA1.hash(data: Array(bits.bytes))
        return digest.map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}
