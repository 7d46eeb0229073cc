/// The package's one source of random bytes: the system's cryptographically secure generator
/// (`getrandom(2)` on Linux, through `SystemRandomNumberGenerator`), for nonces, IVs,
/// challenges, credential keys and throwaway identifiers.
public enum SystemRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var generator = SystemRandomNumberGenerator()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var index = 0
            while index < count {
                let word = generator.next()
                withUnsafeBytes(of: word) { bytes in
                    for byte in bytes.prefix(count - index) {
                        buffer[index] = byte
                        index += 1
                    }
                }
            }
            initialized = count
        }
    }
}
