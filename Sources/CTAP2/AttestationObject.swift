import CBOR

/// An attestation statement format identifier (WebAuthn §8, IANA "WebAuthn Attestation
/// Statement Format Identifiers").
public struct AttestationFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The identifier.
    public var rawValue: String
    /// Creates a format from its identifier.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// packed (WebAuthn §8.2).
    public static let packed = AttestationFormat(rawValue: "packed")
    /// tpm (WebAuthn §8.3).
    public static let tpm = AttestationFormat(rawValue: "tpm")
    /// android-key (WebAuthn §8.4).
    public static let androidKey = AttestationFormat(rawValue: "android-key")
    /// android-safetynet (WebAuthn §8.5).
    public static let androidSafetyNet = AttestationFormat(rawValue: "android-safetynet")
    /// fido-u2f (WebAuthn §8.6).
    public static let fidoU2F = AttestationFormat(rawValue: "fido-u2f")
    /// none (WebAuthn §8.7).
    public static let none = AttestationFormat(rawValue: "none")
    /// apple (WebAuthn §8.8).
    public static let apple = AttestationFormat(rawValue: "apple")

    public var description: String { rawValue }
}

/// A WebAuthn attestation object (WebAuthn §6.5.4): format, authenticator data and
/// attestation statement.
public struct AttestationObject: Hashable, Sendable {
    /// The text keys of the attestation object map.
    public enum Key {
        /// fmt.
        public static let format: CBORValue = "fmt"
        /// attStmt.
        public static let attestationStatement: CBORValue = "attStmt"
        /// authData.
        public static let authData: CBORValue = "authData"
    }

    /// The attestation statement format.
    public var format: AttestationFormat
    /// The authenticator data.
    public var authData: AuthenticatorData
    /// The attestation statement.
    public var attestationStatement: CBORMap

    /// Creates an attestation object from its parts.
    public init(format: AttestationFormat, authData: AuthenticatorData, attestationStatement: CBORMap) {
        self.format = format
        self.authData = authData
        self.attestationStatement = attestationStatement
    }

    /// Parses an encoded attestation object (text keys `fmt`, `attStmt`, `authData`).
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        // Lenient: a client builds this map, not the key (see the reason's comment); the
        // authenticator data inside is the key's and is read strictly.
        let map = try ResponseDecoding.decodeMap(
            bytes, what: "attestation object", lenient: .clientBuiltAttestationObject)
        let r = FieldReader(map, "attestation object")
        guard let fmt = try r.text(Key.format, "fmt") else { throw r.missing("fmt") }
        guard let attStmt = try r.subMap(Key.attestationStatement, "attStmt") else {
            throw r.missing("attStmt")
        }
        guard let authData = try r.bytes(Key.authData, "authData") else { throw r.missing("authData") }
        self.format = AttestationFormat(rawValue: fmt)
        self.attestationStatement = attStmt
        self.authData = try AuthenticatorData(bytes: authData)
    }

    /// The canonical CBOR encoding, as a relying party receives it.
    public var cborEncoded: [UInt8] {
        CBOREncoder.encode(
            .map([
                Key.format: .textString(format.rawValue),
                Key.attestationStatement: .map(attestationStatement),
                Key.authData: .byteString(authData.bytes),
            ]))
    }
}
