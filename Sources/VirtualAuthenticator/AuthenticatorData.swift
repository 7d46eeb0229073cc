import CBOR

/// Authenticator data (WebAuthn §6.1): rpIdHash ‖ flags ‖ signCount ‖ [attestedCredentialData] ‖ [extensions].
struct AuthenticatorData {
    /// The flags byte (WebAuthn §6.1 "flags").
    struct Flags: OptionSet {
        let rawValue: UInt8
        static let userPresent = Flags(rawValue: 0x01)
        static let userVerified = Flags(rawValue: 0x04)
        static let attestedCredentialData = Flags(rawValue: 0x40)
        static let extensionData = Flags(rawValue: 0x80)
    }

    var rpIDHash: [UInt8]
    var flags: Flags
    var signCount: UInt32
    /// aaguid, credential ID and COSE public key (WebAuthn §6.5.2), for makeCredential.
    var attestedCredential: (aaguid: [UInt8], credentialID: [UInt8], publicKey: CBORMap)?
    /// Extension outputs; written (and the ED flag set) only when not empty.
    var extensions: CBORMap = CBORMap()

    var bytes: [UInt8] {
        var flags = flags
        if attestedCredential != nil { flags.insert(.attestedCredentialData) }
        if !extensions.isEmpty { flags.insert(.extensionData) }
        var out = rpIDHash
        out.append(flags.rawValue)
        out += [
            UInt8(signCount >> 24), UInt8(truncatingIfNeeded: signCount >> 16),
            UInt8(truncatingIfNeeded: signCount >> 8), UInt8(truncatingIfNeeded: signCount),
        ]
        if let attested = attestedCredential {
            out += attested.aaguid
            out += [
                UInt8(attested.credentialID.count >> 8),
                UInt8(truncatingIfNeeded: attested.credentialID.count),
            ]
            out += attested.credentialID
            out += CBOREncoder.encode(.map(attested.publicKey))
        }
        if !extensions.isEmpty { out += CBOREncoder.encode(.map(extensions)) }
        return out
    }
}
