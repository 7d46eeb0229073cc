import Crypto
import SwiftASN1
import X509

extension VirtualKey {
    /// An attestation identity made outside the key (a test PKI's P-256 key and the certificate
    /// chain it issued) used instead of the state's: packed attestation signs with ``key`` and
    /// sends ``certificates`` in `x5c` (WebAuthn §8.2.1), so a relying party's path building and
    /// revocation checks (CRL distribution points, an intermediate CA) can be exercised against
    /// a PKI the test controls. Given on every start; never written to the state file.
    public struct ImportedAttestationIdentity: Sendable, Hashable {
        /// The most certificates a chain may hold.
        public static let maximumChainLength = 8

        /// The P-256 private key (raw scalar).
        public var key: [UInt8]
        /// The certificates (DER): the attestation certificate first, then the CAs above it.
        public var certificates: [[UInt8]]

        /// Parses `privateKeyPEM` (a P-256 key, PKCS #8 `PRIVATE KEY` or SEC 1 `EC PRIVATE KEY`)
        /// and `certificatesPEM` (one or more `CERTIFICATE` blocks, the attestation certificate
        /// first); the first certificate must hold the key's public key.
        public init(privateKeyPEM: String, certificatesPEM: String) throws(VirtualKeyError) {
            let privateKey: P256.Signing.PrivateKey
            do { privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) } catch {
                throw VirtualKeyError(
                    .invalidConfiguration, "The attestation key is not a PEM P-256 private key.")
            }
            let documents: [PEMDocument]
            do { documents = try PEMDocument.parseMultiple(pemString: certificatesPEM) } catch {
                throw VirtualKeyError(.invalidConfiguration, "The attestation certificates are not PEM.")
            }
            let ders = documents.filter { $0.discriminator == "CERTIFICATE" }.map(\.derBytes)
            guard !ders.isEmpty, ders.count <= Self.maximumChainLength else {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "The attestation certificate file must hold 1 to \(Self.maximumChainLength) certificates."
                )
            }
            let leaf: Certificate
            do { leaf = try Certificate(derEncoded: ders[0]) } catch {
                throw VirtualKeyError(
                    .invalidConfiguration, "The attestation certificate is not an X.509 certificate.")
            }
            guard leaf.publicKey == Certificate.PublicKey(privateKey.publicKey) else {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "The attestation certificate does not hold the attestation key's public key.")
            }
            key = Array(privateKey.rawRepresentation)
            certificates = ders
        }
    }
}
