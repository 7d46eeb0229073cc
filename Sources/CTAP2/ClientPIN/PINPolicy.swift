/// The PIN composition rules a platform enforces before it sends a PIN (CTAP 2.1 §6.5.1
/// "PIN Composition Requirements"): the PIN is the UTF-8 encoding of its Unicode
/// Normalization Form C, at least `max(4, minPINLength)` code points long, at most 63 bytes,
/// and sent padded with zeros to 64 bytes.
///
/// A PIN that breaks a rule is refused with ``CTAP2Error/Code/pinPolicyViolation`` before any
/// byte reaches the key, so a typo never costs one of the key's PIN attempts.
public enum PINPolicy {
    /// The smallest PIN length the specification allows, in code points.
    public static let minimumCodePoints = 4
    /// The largest PIN the specification allows, in UTF-8 bytes.
    public static let maximumBytes = 63
    /// The size of the padded newPin plaintext.
    public static let paddedSize = 64

    /// The PIN as sent: the UTF-8 bytes of its NFC form.
    // The standard library's own normalizer (the one String comparison uses), not Foundation's
    // precomposedStringWithCanonicalMapping: that is in FoundationInternationalization and
    // would bring ICU and its data into every binary that sends a PIN.
    public static func normalizedBytes(_ pin: String) -> [UInt8] {
        pin._nfcCodeUnits
    }

    /// Checks a PIN about to be set (setPIN, the new PIN of changePIN) against the rules and
    /// the key's `minPINLength` / `maxPINLength`; returns the bytes to send. The caller wipes them.
    public static func newPINBytes(_ pin: String, info: AuthenticatorInfo?) throws(CTAP2Error) -> [UInt8] {
        let minimum = max(minimumCodePoints, info?.minPINLength.map { Int(clamping: $0) } ?? 0)
        var bytes = try checkedBytes(pin, minimum: minimum, what: "new PIN")
        if let maxPINLength = info?.maxPINLength.map({ Int(clamping: $0) }),
            codePoints(bytes) > maxPINLength
        {
            bytes.wipe()
            throw CTAP2Error(
                .pinPolicyViolation,
                "The new PIN is too long: this key accepts at most \(maxPINLength) characters.")
        }
        return bytes
    }

    /// Why a key refused a new PIN (CTAP2_ERR_PIN_POLICY_VIOLATION), as one sentence: its PIN
    /// complexity policy (CTAP 2.2 §6.4 pinComplexityPolicy, with pinComplexityPolicyURL when
    /// the key names one) or, without one, its PIN rules.
    public static func refusalMessage(info: AuthenticatorInfo?) -> String {
        guard info?.pinComplexityPolicy == true else {
            return "The key refused the new PIN: it does not meet this key's PIN policy; choose another."
        }
        let url = info?.pinComplexityPolicyURL.flatMap { String(validating: $0, as: UTF8.self) }
        return "The key refused the new PIN as too easy to guess under its PIN complexity policy"
            + (url.map { " (\($0))" } ?? "") + "; choose a less predictable PIN."
    }

    /// Checks a PIN the user enters to prove knowledge of the current PIN; returns the bytes to
    /// hash. Only the specification's fixed limits apply: a key's minPINLength may have grown
    /// after the PIN was set, and the old PIN is still needed to change it.
    public static func currentPINBytes(_ pin: String) throws(CTAP2Error) -> [UInt8] {
        try checkedBytes(pin, minimum: minimumCodePoints, what: "PIN")
    }

    /// `bytes` padded with zeros to 64 bytes (the newPin plaintext of setPIN and changePIN).
    static func padded(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: paddedSize)
        out.replaceSubrange(0..<min(bytes.count, paddedSize), with: bytes.prefix(paddedSize))
        return out
    }

    private static func checkedBytes(_ pin: String, minimum: Int, what: String) throws(CTAP2Error) -> [UInt8]
    {
        var bytes = normalizedBytes(pin)
        let count = codePoints(bytes)
        if count < minimum {
            bytes.wipe()
            throw CTAP2Error(
                .pinPolicyViolation, "The \(what) is too short: it needs at least \(minimum) characters.")
        }
        if bytes.count > maximumBytes {
            bytes.wipe()
            throw CTAP2Error(
                .pinPolicyViolation,
                "The \(what) is too long: it may take at most \(maximumBytes) bytes in UTF-8.")
        }
        if bytes.contains(0) {
            // The key strips the zero padding, so a PIN with a NUL character could never match.
            bytes.wipe()
            throw CTAP2Error(.pinPolicyViolation, "The \(what) must not contain the NUL character.")
        }
        return bytes
    }

    /// The number of Unicode code points in valid UTF-8: every byte that does not continue a
    /// sequence starts one.
    private static func codePoints(_ utf8: [UInt8]) -> Int {
        utf8.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
    }
}
