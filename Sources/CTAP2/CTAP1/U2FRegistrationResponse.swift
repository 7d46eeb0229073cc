/// The data of a successful U2F_REGISTER response (FIDO U2F Raw Message Formats §4.3):
/// `05` ‖ user public key (65) ‖ key handle length ‖ key handle ‖ attestation certificate (X.509 DER)
/// ‖ signature (DER ECDSA).
///
/// Every length is checked against the bytes received; the certificate's extent comes from its
/// own DER header, since the message does not frame it.
public struct U2FRegistrationResponse: Hashable, Sendable {
    /// The reserved first byte.
    public static let reservedByte: UInt8 = 0x05
    /// The length of an uncompressed P-256 point.
    public static let publicKeySize = 65

    /// The new credential's public key: an uncompressed P-256 point (`04` ‖ x ‖ y).
    public var userPublicKey: [UInt8]
    /// The key handle (the WebAuthn credential ID).
    public var keyHandle: [UInt8]
    /// The attestation certificate, DER.
    public var attestationCertificate: [UInt8]
    /// The attestation signature over `00` ‖ application ‖ challenge ‖ key handle ‖ public key, DER.
    public var signature: [UInt8]

    /// Parses the response data (without the status word).
    public init<Bytes: Collection<UInt8>>(data bytes: Bytes) throws(CTAP2Error) {
        let data = Array(bytes)
        var reader = U2FByteReader(data, what: "U2F registration response")
        guard try reader.byte("reserved byte") == Self.reservedByte else {
            throw .malformed("The U2F registration response does not start with 05.")
        }
        userPublicKey = try reader.take(Self.publicKeySize, "user public key")
        guard userPublicKey.first == 0x04 else {
            throw .malformed("The U2F user public key is not an uncompressed point.")
        }
        let handleLength = Int(try reader.byte("key handle length"))
        guard handleLength > 0 else { throw .malformed("The U2F key handle is empty.") }
        keyHandle = try reader.take(handleLength, "key handle")
        let certificateLength = try reader.derLength(atOffset: 0, "attestation certificate")
        attestationCertificate = try reader.take(certificateLength, "attestation certificate")
        let signatureLength = try reader.derLength(atOffset: 0, "signature")
        signature = try reader.take(signatureLength, "signature")
        guard reader.isAtEnd else {
            throw .malformed("The U2F registration response has \(reader.remaining) bytes after the signature.")
        }
    }

    /// Parses a whole reply (data ‖ status word); a status other than success throws as
    /// ``CTAP2Error/u2f(_:_:file:line:)`` classifies it.
    public init(reply: [UInt8]) throws(CTAP2Error) {
        let (data, status) = try splitU2FResponse(reply, .register)
        guard status == .noError else { throw .u2f(status, .register) }
        try self.init(data: data)
    }

    /// The bytes the attestation signature covers (§4.3): `00` ‖ application ‖ challenge ‖
    /// key handle ‖ user public key.
    public func signedData(challenge: [UInt8], application: [UInt8]) -> [UInt8] {
        [0x00] + application + challenge + keyHandle + userPublicKey
    }
}

/// The data of a successful U2F_AUTHENTICATE response (FIDO U2F Raw Message Formats §5.4):
/// user presence byte ‖ counter (4, big-endian) ‖ signature (DER ECDSA).
public struct U2FAuthenticationResponse: Hashable, Sendable {
    /// The user presence byte: bit 0 set when the user touched the key.
    public var flags: UInt8
    /// The signature counter.
    public var counter: UInt32
    /// The signature over application ‖ flags ‖ counter ‖ challenge, DER.
    public var signature: [UInt8]

    /// Whether the user touched the key (bit 0 of the user presence byte).
    public var userPresent: Bool { flags & 0x01 != 0 }

    /// Parses the response data (without the status word).
    public init<Bytes: Collection<UInt8>>(data bytes: Bytes) throws(CTAP2Error) {
        var reader = U2FByteReader(Array(bytes), what: "U2F authentication response")
        flags = try reader.byte("user presence")
        let counterBytes = try reader.take(4, "counter")
        counter = counterBytes.reduce(0) { $0 << 8 | UInt32($1) }
        let signatureLength = try reader.derLength(atOffset: 0, "signature")
        signature = try reader.take(signatureLength, "signature")
        guard reader.isAtEnd else {
            throw .malformed("The U2F authentication response has \(reader.remaining) bytes after the signature.")
        }
    }

    /// Parses a whole reply (data ‖ status word); a status other than success throws.
    public init(reply: [UInt8]) throws(CTAP2Error) {
        let (data, status) = try splitU2FResponse(reply, .authenticate)
        guard status == .noError else { throw .u2f(status, .authenticate) }
        try self.init(data: data)
    }

    /// The bytes the signature covers (§5.4): application ‖ flags ‖ counter ‖ challenge.
    public func signedData(challenge: [UInt8], application: [UInt8]) -> [UInt8] {
        application + [flags] + counterBytes + challenge
    }

    /// The counter, big-endian.
    public var counterBytes: [UInt8] {
        [UInt8(counter >> 24), UInt8(truncatingIfNeeded: counter >> 16),
         UInt8(truncatingIfNeeded: counter >> 8), UInt8(truncatingIfNeeded: counter)]
    }
}

/// A bounds-checked cursor over a U2F response.
struct U2FByteReader {
    private let bytes: [UInt8]
    private var position = 0
    private let what: String

    init(_ bytes: [UInt8], what: String) {
        self.bytes = bytes
        self.what = what
    }

    var remaining: Int { bytes.count - position }
    var isAtEnd: Bool { position == bytes.count }

    mutating func byte(_ field: String) throws(CTAP2Error) -> UInt8 {
        guard remaining >= 1 else { throw truncated(field) }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func take(_ count: Int, _ field: String) throws(CTAP2Error) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw truncated(field) }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    /// The whole length (header included) of the DER SEQUENCE starting here, checked against
    /// what remains: definite lengths of at most three bytes (16 MiB, far beyond any reply).
    func derLength(atOffset offset: Int, _ field: String) throws(CTAP2Error) -> Int {
        let start = position + offset
        guard bytes.count - start >= 2 else { throw truncated(field) }
        guard bytes[start] == 0x30 else {
            throw .malformed("The \(field) of the \(what) is not a DER SEQUENCE.")
        }
        let first = bytes[start + 1]
        var header = 2
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard (1...3).contains(count) else {
                throw .malformed("The \(field) of the \(what) has an unsupported DER length form.")
            }
            guard bytes.count - start >= 2 + count else { throw truncated(field) }
            for i in 0..<count { length = length << 8 | Int(bytes[start + 2 + i]) }
            guard length >= 0x80, count == 1 || bytes[start + 2] != 0 else {
                throw .malformed("The \(field) of the \(what) has a non-minimal DER length.")
            }
            header += count
        }
        guard length <= bytes.count - start - header else { throw truncated(field) }
        return header + length
    }

    private func truncated(_ field: String) -> CTAP2Error {
        .malformed("The \(what) ends inside its \(field).")
    }
}
