import Crypto

/// The credential IDs (and U2F key handles) this key issues: the credential's algorithm and
/// key seed sealed with AES-256-GCM under the key's wrapping key, with the rpIdHash (or U2F
/// application parameter) as associated data. A forged, altered or other relying party's ID
/// fails to open, so non-discoverable credentials need no storage.
///
/// Layout: version (1) ‖ nonce (12) ‖ ciphertext of algorithm (2, big-endian, signed) ‖ seed (32) ‖ tag (16).
enum CredentialID {
    static let version: UInt8 = 1
    static let nonceLength = 12
    static let plaintextLength = 2 + CredentialPrivateKey.seedLength
    static let tagLength = 16
    static let length = 1 + nonceLength + plaintextLength + tagLength

    /// Seals `seed` for `algorithm`, bound to `rpIDHash`.
    static func seal(
        algorithm: COSEAlgorithm, seed: [UInt8], rpIDHash: [UInt8], wrappingKey: SymmetricKey
    ) throws(VirtualKeyError) -> [UInt8] {
        let alg = Int16(truncatingIfNeeded: algorithm.rawValue)
        let plaintext = [UInt8(truncatingIfNeeded: alg >> 8), UInt8(truncatingIfNeeded: alg)] + seed
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
    ) -> (algorithm: COSEAlgorithm, seed: [UInt8])? {
        guard id.count == length, id[0] == version else { return nil }
        let nonceEnd = 1 + nonceLength
        let cipherEnd = nonceEnd + plaintextLength
        guard
            let nonce = try? AES.GCM.Nonce(data: id[1..<nonceEnd]),
            let box = try? AES.GCM.SealedBox(
                nonce: nonce, ciphertext: id[nonceEnd..<cipherEnd], tag: id[cipherEnd..<id.count]),
            let plaintext = try? AES.GCM.open(box, using: wrappingKey, authenticating: rpIDHash)
        else { return nil }
        let bytes = Array(plaintext)
        guard bytes.count == plaintextLength else { return nil }
        let alg = Int16(bitPattern: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        return (COSEAlgorithm(rawValue: Int(alg)), Array(bytes[2...]))
    }
}
