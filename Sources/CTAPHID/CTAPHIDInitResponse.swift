/// The payload of a CTAPHID_INIT response (CTAP 2.1 §11.2.9.1.3): the echoed nonce, the channel
/// the device allocated, and its protocol version, device version and capabilities.
public struct CTAPHIDInitResponse: Hashable, Sendable {
    /// The 8-byte nonce the host sent, echoed.
    public var nonce: [UInt8]
    /// The channel ID allocated for the host.
    public var channel: UInt32
    /// The CTAPHID protocol version (2).
    public var protocolVersion: UInt8
    /// The device's major version number.
    public var majorVersion: UInt8
    /// The device's minor version number.
    public var minorVersion: UInt8
    /// The device's build version number.
    public var buildVersion: UInt8
    /// The device's capability flags.
    public var capabilities: CTAPHIDCapabilities

    /// The size of a CTAPHID_INIT nonce.
    public static let nonceSize = 8
    /// The size of the response payload.
    public static let size = 17
    /// The CTAPHID protocol version this implementation speaks.
    public static let currentProtocolVersion: UInt8 = 2

    /// Creates a response from its fields.
    public init(
        nonce: [UInt8], channel: UInt32, protocolVersion: UInt8 = currentProtocolVersion, majorVersion: UInt8,
        minorVersion: UInt8, buildVersion: UInt8, capabilities: CTAPHIDCapabilities
    ) {
        self.nonce = nonce
        self.channel = channel
        self.protocolVersion = protocolVersion
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.buildVersion = buildVersion
        self.capabilities = capabilities
    }

    /// Parses a response payload. Devices may append bytes after the 17 defined ones; they are ignored.
    public init(payload: [UInt8]) throws(CTAPHIDError) {
        guard payload.count >= Self.size else {
            throw CTAPHIDError(
                .malformedMessage,
                "A CTAPHID_INIT response of \(payload.count) bytes is shorter than 17 bytes.")
        }
        let channel = CTAPHIDPacket.channel(of: Array(payload[8..<12])) ?? 0
        self.init(
            nonce: Array(payload[0..<8]), channel: channel, protocolVersion: payload[12],
            majorVersion: payload[13], minorVersion: payload[14], buildVersion: payload[15],
            capabilities: CTAPHIDCapabilities(rawValue: payload[16]))
    }

    /// The response payload.
    public var payload: [UInt8] {
        var bytes = Array(nonce.prefix(Self.nonceSize))
        bytes.append(contentsOf: repeatElement(0, count: Self.nonceSize - bytes.count))
        bytes.append(contentsOf: [
            UInt8(truncatingIfNeeded: channel >> 24), UInt8(truncatingIfNeeded: channel >> 16),
            UInt8(truncatingIfNeeded: channel >> 8), UInt8(truncatingIfNeeded: channel),
            protocolVersion, majorVersion, minorVersion, buildVersion, capabilities.rawValue,
        ])
        return bytes
    }
}
