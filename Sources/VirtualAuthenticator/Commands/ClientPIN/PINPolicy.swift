import Crypto

/// The PIN rules of CTAP 2.1 §6.5.1 and how a PIN is stored: only LEFT(SHA-256(PIN), 16).
enum PINPolicy {
    /// The length of a padded PIN as the platform encrypts it (§6.5.5.5).
    static let paddedLength = 64
    /// The longest PIN, in UTF-8 bytes.
    static let maxLength = 63
    /// PIN retries of a fresh PIN (§6.5.2.2 pinRetries).
    static let maxRetries = 8
    /// Consecutive wrong PINs after which a power cycle is needed (§6.5.5.7.1).
    static let maxConsecutiveMismatches = 3
    /// The stored PIN hash length.
    static let hashLength = 16

    /// Why a PIN breaks the policy, or nil when it is acceptable. Never includes the PIN.
    static func check(_ pin: [UInt8], minLength: Int) -> String? {
        guard pin.count <= maxLength else { return "The PIN is longer than 63 bytes." }
        guard let text = String(validating: pin, as: UTF8.self) else { return "The PIN is not UTF-8 text." }
        guard text.unicodeScalars.count >= minLength else {
            return "The PIN is shorter than the minimum of \(minLength) code points."
        }
        return nil
    }

    /// A PIN's length in Unicode code points (0 when it is not UTF-8, which ``check`` refuses).
    static func length(_ pin: [UInt8]) -> Int {
        String(validating: pin, as: UTF8.self)?.unicodeScalars.count ?? 0
    }

    /// The PIN as stored and compared: LEFT(SHA-256(PIN), 16).
    static func hash(_ pin: [UInt8]) -> [UInt8] {
        Array(Array(SHA256.hash(data: pin)).prefix(hashLength))
    }

    /// The PIN inside a decrypted paddedNewPin: the trailing zero bytes removed (§6.5.5.5 step 6).
    /// A padded PIN of the wrong size is CTAP2_ERR_PIN_POLICY_VIOLATION.
    static func unpad(_ padded: [UInt8]) throws(VirtualKeyError) -> [UInt8] {
        guard padded.count == paddedLength else {
            throw .rejected(.pinPolicyViolation, "The padded PIN is \(padded.count) bytes, not 64.")
        }
        var end = padded.count
        while end > 0 && padded[end - 1] == 0 { end -= 1 }
        return Array(padded[..<end])
    }

    /// Constant-time equality of two hashes.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
