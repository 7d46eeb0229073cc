import _SecurityKeyInternals
import CBOR
import Crypto
import FoundationEssentials
import X509
import _CryptoExtras

/// A FIDO metadata BLOB whose JWS signature and signing chain have been verified (FIDO MDS3
/// §3.1.7 "Metadata BLOB", §3.2 "Metadata BLOB processing rules"). The only way to get one
/// from untrusted bytes is ``MetadataBLOBVerifier/verify(_:)``.
public struct MetadataBLOB: Sendable {
    /// The payload: serial number, next update and the entries.
    public var payload: MetadataBLOBPayload
    /// The JWS algorithm that signed it (RS256, ES256 or PS256).
    public var algorithm: String
    /// The signing certificate first, then the rest of the x5c header as sent.
    public var signingChain: [Certificate]
    /// The anchor the signing chain led to; nil for a BLOB read back from the local cache.
    public var trustAnchor: Certificate?
    /// The moment the certificates were checked at.
    public var verificationTime: Date
    /// SHA-256 of the BLOB as received: FIDO has republished changed BLOBs under one `no`.
    public var sha256: [UInt8]
    /// What checking the signing chain against the CRLs it names found; nil when not attempted
    /// (no ``MetadataBLOBVerifier/revocation`` checker, or a BLOB read back from the cache).
    public var revocation: RevocationCheck?

    /// Whether `nextUpdate` had passed at the verification time: a newer BLOB should exist.
    public var isStale: Bool { payload.nextUpdateDate.map { verificationTime >= $0 } ?? true }

    /// Whether `nextUpdate` has passed at `date`.
    public func isStale(at date: Date) -> Bool { payload.nextUpdateDate.map { date >= $0 } ?? true }

    init(
        payload: MetadataBLOBPayload, algorithm: String, signingChain: [Certificate],
        trustAnchor: Certificate?,
        verificationTime: Date, sha256: [UInt8], revocation: RevocationCheck? = nil
    ) {
        self.revocation = revocation
        self.payload = payload
        self.algorithm = algorithm
        self.signingChain = signingChain
        self.trustAnchor = trustAnchor
        self.verificationTime = verificationTime
        self.sha256 = sha256
    }
}

/// The parts of a JWS compact serialization (RFC 7515 §7.1), checked for shape only.
struct JWSCompact {
    var algorithm: String
    var x5c: [Certificate]
    var signingInput: [UInt8]
    var signature: [UInt8]
    var payload: [UInt8]

    /// The largest BLOB accepted. Real BLOBs were 10 MB in 2026 and grow by a few MB a year.
    static let maximumSize = 64 << 20
    static let maximumHeaderSize = 64 << 10
    static let maximumChainLength = 8

    init(_ bytes: [UInt8]) throws(WebAuthnVerificationError) {
        guard bytes.count <= Self.maximumSize else {
            throw Self.malformed("The metadata BLOB is larger than 64 MiB.")
        }
        // A trailing newline is common in saved files and is not part of the JWS.
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        let text = bytes[..<end]
        let dots = text.indices.filter { text[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else {
            throw Self.malformed("The metadata BLOB is not a JWS (three dot-separated parts).")
        }
        let headerText = text[..<dots[0]]
        let payloadText = text[(dots[0] + 1)..<dots[1]]
        let signatureText = text[(dots[1] + 1)...]
        guard headerText.count <= Self.maximumHeaderSize else {
            throw Self.malformed("The metadata BLOB's JWS header is larger than 64 KiB.")
        }
        guard let header = Base64.decode(headerText, alphabet: .url, padding: .forbidden),
            let payload = Base64.decode(payloadText, alphabet: .url, padding: .forbidden),
            let signature = Base64.decode(signatureText, alphabet: .url, padding: .forbidden)
        else { throw Self.malformed("The metadata BLOB's JWS parts are not strict base64url.") }
        guard let object = JSONValue.object(decoding: header) else {
            throw Self.malformed("The metadata BLOB's JWS header is not a JSON object.")
        }
        guard let alg = object[member: "alg"]?.stringValue else { throw Self.malformed("The JWS header has no alg.") }
        // RFC 7515 §4.1.11: extensions a verifier does not understand must make it refuse.
        guard object[member: "crit"] == nil else { throw Self.malformed("The JWS header has critical extensions.") }
        guard let chainValues = object[member: "x5c"]?.arrayValue,
            case let chain = chainValues.compactMap(\.stringValue), chain.count == chainValues.count,
            (1...Self.maximumChainLength).contains(chain.count)
        else {
            throw Self.malformed("The JWS header has no x5c chain of 1 to 8 certificates.")
        }
        var certificates: [Certificate] = []
        for entry in chain {
            guard entry.utf8.count <= 32 << 10, let der = Base64.decode(entry, alphabet: .standard, padding: .required),
                let certificate = try? Certificate(derEncoded: der)
            else { throw Self.malformed("An x5c entry of the JWS header is not a base64 DER certificate.") }
            certificates.append(certificate)
        }
        self.algorithm = alg
        self.x5c = certificates
        self.signingInput = Array(text[..<dots[1]])
        self.signature = signature
        self.payload = payload
    }

    static func malformed(_ message: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(.metadataMalformed, message)
    }

    /// Verifies the JWS signature with the public key of x5c[0] (RFC 7518 §3.3-3.5).
    func verifySignature() throws(WebAuthnVerificationError) {
        guard let key = x5c.first?.publicKey else {
            throw Self.malformed("The JWS has no signing certificate.")
        }
        let valid: Bool
        switch algorithm {
        case "RS256", "PS256":
            guard let rsa = _RSA.Signing.PublicKey(key) else {
                throw WebAuthnVerificationError(
                    .metadataSignatureInvalid,
                    "The metadata BLOB's signing certificate has no RSA key for \(algorithm).")
            }
            let padding: _RSA.Signing.Padding = algorithm == "RS256" ? .insecurePKCS1v1_5 : .PSS
            valid = rsa.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: signingInput),
                padding: padding)
        case "ES256":
            // JWS carries ES256 as r || s (RFC 7518 §3.4), never as DER.
            guard let p256 = P256.Signing.PublicKey(key), signature.count == 64,
                let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else {
                throw WebAuthnVerificationError(
                    .metadataSignatureInvalid, "The metadata BLOB's ES256 signature is not a P-256 r||s pair."
                )
            }
            valid = p256.isValidSignature(ecdsa, for: SHA256.hash(data: signingInput))
        default:
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm,
                "The metadata BLOB is signed with \(algorithm), not RS256, ES256 or PS256.")
        }
        guard valid else {
            throw WebAuthnVerificationError(
                .metadataSignatureInvalid,
                "The metadata BLOB's signature does not verify: it is not what FIDO signed.")
        }
    }
}
