import _SecurityKeyInternals
import CBOR
import CTAP2
import Crypto
import FoundationEssentials
import X509
import _CryptoExtras

/// A SafetyNet attestation response: a JWS in compact serialization whose header carries the
/// signing chain (x5c) and whose payload states the nonce and device integrity.
///
/// SafetyNet was shut down by Google in 2024 and the android-safetynet format is deprecated
/// (WebAuthn L3 §8.5); it is verified for old registrations only.
public struct SafetyNetResponse: Sendable {
    /// The largest response accepted; real ones are a few KiB.
    public static let maximumSize = 64 * 1024

    /// The JWS header's alg.
    public var algorithm: String
    /// The header's x5c, leaf first.
    public var certificates: [Certificate]
    /// The payload's nonce (base64 of SHA-256 of authData ‖ clientDataHash).
    public var nonce: String
    /// The payload's ctsProfileMatch.
    public var ctsProfileMatch: Bool
    /// The payload's timestampMs.
    public var timestampMilliseconds: Int64?
    /// The signed part, `header.payload`, as ASCII.
    var signingInput: [UInt8]
    /// The signature bytes.
    var signature: [UInt8]

    /// Parses the JWS, refusing anything malformed with a typed error (signature not checked).
    public init(jws: [UInt8]) throws(WebAuthnVerificationError) {
        guard jws.count <= Self.maximumSize else {
            throw Self.malformed("is larger than \(Self.maximumSize) bytes")
        }
        let parts = jws.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Self.malformed("is not a compact JWS of three parts") }
        guard let headerBytes = Base64.decode(parts[0], alphabet: .url, padding: .optional),
            let payloadBytes = Base64.decode(parts[1], alphabet: .url, padding: .optional),
            let signature = Base64.decode(parts[2], alphabet: .url, padding: .optional)
        else { throw Self.malformed("has a part that is not base64url") }
        guard let header = JSONValue.object(decoding: headerBytes),
            let payload = JSONValue.object(decoding: payloadBytes)
        else { throw Self.malformed("has a header or payload that is not a JSON object") }
        guard let alg = header[member: "alg"]?.stringValue else { throw Self.malformed("header names no alg") }
        guard let x5cValues = header[member: "x5c"]?.arrayValue, !x5cValues.isEmpty,
            case let x5c = x5cValues.compactMap(\.stringValue), x5c.count == x5cValues.count
        else {
            throw Self.malformed("header carries no x5c")
        }
        var certificates: [Certificate] = []
        for entry in x5c {
            guard let der = Base64.decode(entry, alphabet: .standard, padding: .required) else {
                throw Self.malformed("x5c entry is not base64")
            }
            do {
                certificates.append(try Certificate(derEncoded: der))
            } catch {
                throw WebAuthnVerificationError(
                    .invalidCertificate, "A SafetyNet x5c certificate is not valid DER X.509.", underlying: error)
            }
        }
        guard let nonce = payload[member: "nonce"]?.stringValue else { throw Self.malformed("payload has no nonce") }
        self.algorithm = alg
        self.certificates = certificates
        self.nonce = nonce
        self.ctsProfileMatch = payload[member: "ctsProfileMatch"]?.boolValue ?? false
        self.timestampMilliseconds = Self.milliseconds(payload[member: "timestampMs"])
        self.signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        self.signature = signature
    }

    /// A JSON number as whole milliseconds (a fraction cut off); nil for anything else.
    private static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let n)?: return n
        case .raw(let text)?:
            guard let number = Double(text), number.isFinite else { return nil }
            return Int64(exactly: number.rounded(.towardZero))
        default: return nil
        }
    }

    private static func malformed(_ what: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(.malformedInput, "The SafetyNet response \(what).")
    }

    /// Checks the JWS signature with the leaf certificate's key (RS256 or ES256).
    func verifySignature() throws(WebAuthnVerificationError) {
        let key = try AttestationCertificates.signatureKey(of: certificates[0])
        switch (algorithm, key) {
        case ("RS256", _):
            try key.verifySignature(signature, for: signingInput, algorithm: .rs256)
        case ("ES256", .p256(let k)):
            // JWS ECDSA signatures are r ‖ s, not DER.
            guard let sig = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                k.isValidSignature(sig, for: SHA256.hash(data: signingInput))
            else {
                throw WebAuthnVerificationError(.verificationFailed, "The SafetyNet JWS signature does not verify.")
            }
        default:
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm, "SafetyNet responses signed with \(algorithm) cannot be verified here.")
        }
    }
}

/// The android-safetynet attestation statement format (WebAuthn §8.5, deprecated).
enum AndroidSafetyNetAttestation {
    /// The host name the SafetyNet signing certificate must be issued to.
    static let attestationHost = "attest.android.com"

    static func verify(
        _ statement: CBORMap, authData: AuthenticatorData, credential: AttestedCredentialData,
        clientDataHash: [UInt8]
    ) throws(WebAuthnVerificationError) -> AttestationVerification {
        let r = StatementReader(statement, "android-safetynet attestation statement")
        guard let version = statement["ver"] else { throw r.missing("ver") }
        guard let text = version.stringValue, !text.isEmpty else {
            throw WebAuthnVerificationError(
                .malformedInput, "The android-safetynet attestation statement's ver is not a non-empty string.")
        }
        let response = try SafetyNetResponse(jws: try r.bytes("response"))
        let expected = Base64.encode(SHA256.hash(data: authData.bytes + clientDataHash))
        guard response.nonce == expected else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The SafetyNet nonce is not the hash of authData and clientDataHash.")
        }
        try response.verifySignature()
        guard issuedToAttestationHost(response.certificates[0]) else {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The SafetyNet response is not signed by a certificate for \(attestationHost).")
        }
        guard response.ctsProfileMatch else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The SafetyNet response states the device failed its CTS profile match.")
        }
        return AttestationVerification(type: .basic, trustPath: response.certificates)
    }

    static func issuedToAttestationHost(_ certificate: Certificate) -> Bool {
        if let names = try? certificate.extensions.subjectAlternativeNames,
            names.contains(where: { if case .dnsName(let n) = $0 { n == attestationHost } else { false } })
        {
            return true
        }
        return certificate.subject.contains { rdn in
            rdn.contains { $0.type == .RDNAttributeType.commonName && String($0.value) == attestationHost }
        }
    }
}
