import CBOR

/// The authenticator data structure (WebAuthn §6.1): what an authenticator signs, with the
/// raw bytes kept for signature verification.
public struct AuthenticatorData: Hashable, Sendable {
    /// The flags byte (WebAuthn §6.1, "flags").
    public struct Flags: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// UP: the user was present.
        public static let userPresent = Flags(rawValue: 0x01)
        /// UV: the user was verified.
        public static let userVerified = Flags(rawValue: 0x04)
        /// BE: the credential may be backed up (backup eligible).
        public static let backupEligible = Flags(rawValue: 0x08)
        /// BS: the credential is backed up (backup state).
        public static let backedUp = Flags(rawValue: 0x10)
        /// AT: attested credential data follows.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// ED: extension data follows.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// The bytes as the authenticator sent them.
    public let bytes: [UInt8]
    /// SHA-256 of the RP ID.
    public let rpIDHash: [UInt8]
    /// The flags.
    public let flags: Flags
    /// The signature counter.
    public let signCount: UInt32
    /// The attested credential data, when the AT flag is set.
    public let attestedCredentialData: AttestedCredentialData?
    /// The authenticator extension outputs, when the ED flag is set.
    public let extensions: CBORMap?

    /// Parses authenticator data; every length is checked against what is left.
    public init(bytes: [UInt8]) throws(CTAP2Error) {
        guard bytes.count >= 37 else {
            throw CTAP2Error.malformed(
                "The authenticator data is \(bytes.count) bytes; at least 37 are required.")
        }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var position = 37
        if flags.contains(.attestedCredentialData) {
            let (data, end) = try AttestedCredentialData.parse(bytes, at: position)
            attestedCredentialData = data
            position = end
        } else {
            attestedCredentialData = nil
        }
        if flags.contains(.extensionData) {
            guard position < bytes.count else {
                throw CTAP2Error.malformed(
                    "The ED flag is set but the authenticator data holds no extensions.")
            }
            let value: CBORValue
            let end: Int
            do throws(CBORError) {
                (value, end) = try ResponseDecoding.decoder().decodePrefix(bytes[position...])
            } catch {
                throw CTAP2Error.malformed(
                    "The extensions in the authenticator data are not valid CBOR.", error)
            }
            guard let map = value.mapValue else {
                throw CTAP2Error.malformed("The extensions in the authenticator data are not a CBOR map.")
            }
            extensions = map
            position = end
        } else {
            extensions = nil
        }
        guard position == bytes.count else {
            throw CTAP2Error.malformed(
                "\(bytes.count - position) unexpected bytes follow the authenticator data.")
        }
    }

    private init(
        bytes: [UInt8], rpIDHash: [UInt8], flags: Flags, signCount: UInt32,
        attestedCredentialData: AttestedCredentialData?, extensions: CBORMap?
    ) {
        self.bytes = bytes
        self.rpIDHash = rpIDHash
        self.flags = flags
        self.signCount = signCount
        self.attestedCredentialData = attestedCredentialData
        self.extensions = extensions
    }

    /// This authenticator data with `aaguid` in place of its attested credential data's
    /// (``AAGUID/zero`` removes attestation, WebAuthn L3 §5.1.3 step 21), bytes and parsed
    /// value alike; nil when it holds no attested credential data.
    public func replacingAAGUID(with aaguid: AAGUID) -> AuthenticatorData? {
        // rpIdHash (32) ‖ flags (1) ‖ signCount (4) ‖ AAGUID (16) ‖ ...: the parse checked the
        // length.
        guard let credential = attestedCredentialData else { return nil }
        var replaced = bytes
        replaced.replaceSubrange(37..<53, with: aaguid.bytes)
        return AuthenticatorData(
            bytes: replaced, rpIDHash: rpIDHash, flags: flags, signCount: signCount,
            attestedCredentialData: AttestedCredentialData(
                aaguid: aaguid, credentialID: credential.credentialID,
                credentialPublicKey: credential.credentialPublicKey),
            extensions: extensions)
    }

    /// Whether the UP flag is set.
    public var userPresent: Bool { flags.contains(.userPresent) }
    /// Whether the UV flag is set.
    public var userVerified: Bool { flags.contains(.userVerified) }
}

/// The attested credential data inside authenticator data (WebAuthn §6.5.1).
public struct AttestedCredentialData: Hashable, Sendable {
    /// The authenticator model.
    public let aaguid: AAGUID
    /// The new credential's ID.
    public let credentialID: [UInt8]
    /// The new credential's public key.
    public let credentialPublicKey: COSEKey

    /// Parses attested credential data starting at `start`; returns it and the index past it.
    static func parse(_ bytes: [UInt8], at start: Int) throws(CTAP2Error) -> (AttestedCredentialData, Int) {
        guard bytes.count - start >= 18 else {
            throw CTAP2Error.malformed("The AT flag is set but the attested credential data is truncated.")
        }
        let aaguid = AAGUID(unchecked: Array(bytes[start..<(start + 16)]))
        let idLength = Int(bytes[start + 16]) << 8 | Int(bytes[start + 17])
        let idStart = start + 18
        guard idLength <= 1023 else {
            throw CTAP2Error.malformed(
                "The credential ID is \(idLength) bytes; WebAuthn allows at most 1023.")
        }
        guard bytes.count - idStart >= idLength else {
            throw CTAP2Error.malformed(
                "The credential ID length \(idLength) runs past the authenticator data.")
        }
        let credentialID = Array(bytes[idStart..<(idStart + idLength)])
        let keyStart = idStart + idLength
        guard keyStart < bytes.count else {
            throw CTAP2Error.malformed("The attested credential data lacks its public key.")
        }
        let value: CBORValue
        let end: Int
        do throws(CBORError) {
            (value, end) = try ResponseDecoding.decoder().decodePrefix(bytes[keyStart...])
        } catch {
            throw CTAP2Error.malformed("The credential public key is not valid CBOR.", error)
        }
        guard let map = value.mapValue else {
            throw CTAP2Error.malformed("The credential public key is not a CBOR map.")
        }
        let key = try COSEKey(map: map)
        return (
            AttestedCredentialData(aaguid: aaguid, credentialID: credentialID, credentialPublicKey: key), end
        )
    }
}
