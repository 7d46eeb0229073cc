import Crypto

/// The credential IDs (and U2F key handles) this key issues: the credential's algorithm, key
/// seed and extension flags sealed with AES-256-GCM under the key's wrapping key, with the
/// rpIdHash (or U2F application parameter) as associated data. A forged, altered or other
/// relying party's ID fails to open, so non-discoverable credentials need no storage.
///
/// Layout (version 2): version (1) ‖ nonce (12) ‖ ciphertext of algorithm (2, big-endian,
/// signed) ‖ seed (32) ‖ flags (1) ‖ tag (16): 64 bytes, the default maxCredentialIdLength.
/// Version 1 IDs (issued before extensions, without the flags byte) still open, with no flags.
enum CredentialID {
    static let version: UInt8 = 2
    static let legacyVersion: UInt8 = 1
    static let nonceLength = 12
    static let plaintextLength = 2 + CredentialPrivateKey.seedLength + 1
    static let legacyPlaintextLength = 2 + CredentialPrivateKey.seedLength
    static let tagLength = 16
    static let length = 1 + nonceLength + plaintextLength + tagLength
    static let legacyLength = 1 + nonceLength + legacyPlaintextLength + tagLength

    /// What a non-discoverable credential remembers of its extensions (CTAP 2.1 §12): the
    /// credProtect level (0 when none was asked for), whether hmac-secret was enabled and whether
    /// the credential is thirdPartyPayment-enabled.
    struct Flags: Hashable, Sendable {
        var rawValue: UInt8

        init(rawValue: UInt8) { self.rawValue = rawValue }

        init(credProtect: CredProtectLevel?, hmacSecret: Bool, thirdPartyPayment: Bool = false) {
            rawValue = (credProtect?.rawValue ?? 0) & 0x03 | (hmacSecret ? 0x04 : 0) | (thirdPartyPayment ? 0x08 : 0)
        }

        /// The credProtect level sealed in the ID; none is userVerificationOptional.
        var credProtect: CredProtectLevel { CredProtectLevel(rawValue: rawValue & 0x03) ?? .optional }
        /// Whether the credential was made with hmac-secret.
        var hmacSecret: Bool { rawValue & 0x04 != 0 }
        /// Whether the credential was made for third-party payment (CTAP 2.2 thirdPartyPayment).
        var thirdPartyPayment: Bool { rawValue & 0x08 != 0 }
    }

    /// Seals `seed` for `algorithm`, bound to `rpIDHash`.
    static func seal(
        algorithm: COSEAlgorithm, seed: [UInt8], rpIDHash: [UInt8], wrappingKey: SymmetricKey,
        flags: Flags = Flags(rawValue: 0)
    ) throws(VirtualKeyError) -> [UInt8] {
        let alg = Int16(truncatingIfNeeded: algorithm.rawValue)
        let plaintext =
            [UInt8(truncatingIfNeeded: alg >> 8), UInt8(truncatingIfNeeded: alg)] + seed + [flags.rawValue]
        do {
            let box = try AES.GCM.seal(plaintext, using: wrappingKey, authenticating: rpIDHash)
            return [version] + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw VirtualKeyError(.crypto, "Sealing a credential ID failed.", underlying: error)
        }
    }

    /// Opens an ID issued by this key for `rpIDHash`; nil for anything else.
    static func open(
        _ id: [UInt8], rpIDHash: [UInt8], wrappingKey: SymmetricKey
    ) -> (algorithm: COSEAlgorithm, seed: [UInt8], flags: Flags)? {
        let expectedPlaintext: Int
        if id.count == length && id.first == version {
            expectedPlaintext = plaintextLength
        } else if id.count == legacyLength && id.first == legacyVersion {
            expectedPlaintext = legacyPlaintextLength
        } else {
            return nil
        }
        let nonceEnd = 1 + nonceLength
        let cipherEnd = nonceEnd + expectedPlaintext
        guard
            let nonce = try? AES.GCM.Nonce(data: id[1..<nonceEnd]),
            let box = try? AES.GCM.SealedBox(
                nonce: nonce, ciphertext: id[nonceEnd..<cipherEnd], tag: id[cipherEnd..<id.count]),
            let plaintext = try? AES.GCM.open(box, using: wrappingKey, authenticating: rpIDHash)
        else { return nil }
        let bytes = Array(plaintext)
        guard bytes.count == expectedPlaintext else { return nil }
        let alg = Int16(bitPattern: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        let seedEnd = 2 + CredentialPrivateKey.seedLength
        let flags = Flags(rawValue: bytes.count > seedEnd ? bytes[seedEnd] : 0)
        return (COSEAlgorithm(rawValue: Int(alg)), Array(bytes[2..<seedEnd]), flags)
    }
}
