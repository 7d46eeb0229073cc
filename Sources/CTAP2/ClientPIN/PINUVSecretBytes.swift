import Synchronization

/// Bytes that must not outlive their use (a shared secret, a pinUvAuthToken): held in one
/// buffer that ``wipe()`` and `deinit` overwrite with zeros.
///
/// Limits of wiping in Swift: `[UInt8]` is copy-on-write and the optimizer, swift-crypto
/// (`SymmetricKey`, HMAC and AES contexts) and the CBOR encoder make copies this type cannot
/// reach; the Strings a PIN arrives in are immutable and cannot be wiped at all. Wiping the
/// buffers this module owns shortens how long a secret sits in memory; it does not guarantee
/// that no copy remains.
final class PINUVSecretBytes: Sendable {
    private let storage: Mutex<[UInt8]?>

    init(_ bytes: [UInt8]) { storage = Mutex(bytes) }

    deinit { wipe() }

    /// Whether ``wipe()`` has run.
    var isWiped: Bool { storage.withLock { $0 == nil } }

    /// Overwrites the bytes with zeros and forgets them; later uses throw.
    func wipe() {
        storage.withLock { bytes in
            bytes?.wipe()
            bytes = nil
        }
    }

    /// Runs `body` with the bytes, or throws ``CTAP2Error/Code/secretWiped`` once wiped.
    func withBytes<R>(
        _ what: String, _ body: ([UInt8]) throws(CTAP2Error) -> R
    ) throws(CTAP2Error) -> R {
        try storage.withLock { (bytes) throws(CTAP2Error) -> R in
            guard let bytes else {
                throw CTAP2Error(.secretWiped, "The \(what) was already wiped; get a new one.")
            }
            return try body(bytes)
        }
    }
}
