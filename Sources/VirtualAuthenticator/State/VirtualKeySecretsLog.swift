#if canImport(Glibc)
    import Glibc
#endif
import FoundationEssentials
import Synchronization

/// A test-only record of the session secrets a virtual key hands out, like a TLS stack's
/// `SSLKEYLOGFILE`: each pinUvAuthToken it issues and each shared secret it agrees with a
/// platform, one line each, so that a test can look for them in a host's output.
///
/// Never on by default: `securitykey virtual serve --secrets-log FILE` refuses unless
/// `SECURITYKEY_ALLOW_SECRETS_LOG=1` says the caller knows the file defeats PIN protection for
/// as long as the tokens live. Lines are `PIN_UV_AUTH_TOKEN <protocol> <hex>` and
/// `SHARED_SECRET <protocol> <hex>` (protocol two's secret is its HMAC key ‖ AES key).
public final class VirtualKeySecretsLog: Sendable {
    /// What a line records.
    public struct Kind: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A pinUvAuthToken, as the key issued it (before encryption).
        public static let pinUVAuthToken = Kind(rawValue: "PIN_UV_AUTH_TOKEN")
        /// A shared secret from a platform's key agreement (CTAP 2.1 §6.5.6 `decapsulate`).
        public static let sharedSecret = Kind(rawValue: "SHARED_SECRET")
    }

    /// The file's path.
    public let path: String
    private let descriptor: Mutex<Int32>

    /// Opens `path` for appending (created with mode 0600).
    public init(path: String) throws(VirtualKeyError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw VirtualKeyError(.stateFileIO, "Cannot open the secrets log \(path): \(String(cString: strerror(errno))).")
        }
        self.path = path
        self.descriptor = Mutex(fd)
    }

    deinit {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
        }
    }

    /// Appends one line: `KIND PROTOCOL HEX`.
    func record(_ kind: Kind, protocolVersion: Int, _ secret: [UInt8]) {
        var line = Array("\(kind.rawValue) \(protocolVersion) ".utf8)
        let digits = Array("0123456789abcdef".utf8)
        for byte in secret {
            line.append(digits[Int(byte >> 4)])
            line.append(digits[Int(byte & 0x0F)])
        }
        line.append(UInt8(ascii: "\n"))
        descriptor.withLock { fd in
            // One write per line with O_APPEND: lines never interleave.
            _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        line.zeroize()
    }
}
