/// Random values for probes and throwaway registrations (RP IDs, client data hashes,
/// credential IDs no key can hold), from the system's generator.
enum RandomBytes {
    /// `count` random bytes.
    static func make(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// `count` random bytes as lowercase hex.
    static func hex(_ count: Int) -> String {
        make(count).map { byte in
            let text = String(byte, radix: 16)
            return byte < 0x10 ? "0" + text : text
        }.joined()
    }
}
