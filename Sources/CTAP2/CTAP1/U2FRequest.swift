/// A CTAP1/U2F instruction byte (FIDO U2F Raw Message Formats §3.1).
public struct U2FInstruction: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// U2F_REGISTER (§4).
    public static let register = U2FInstruction(rawValue: 0x01)
    /// U2F_AUTHENTICATE (§5).
    public static let authenticate = U2FInstruction(rawValue: 0x02)
    /// U2F_VERSION (§6).
    public static let version = U2FInstruction(rawValue: 0x03)

    public var description: String {
        switch self {
        case .register: "U2F_REGISTER"
        case .authenticate: "U2F_AUTHENTICATE"
        case .version: "U2F_VERSION"
        default: "instruction 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// The control byte (P1) of U2F_AUTHENTICATE (FIDO U2F Raw Message Formats §5.1).
public struct U2FControl: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// check-only: answers "conditions not satisfied" for a known key handle, signs nothing.
    public static let checkOnly = U2FControl(rawValue: 0x07)
    /// enforce-user-presence-and-sign: signs after a touch.
    public static let enforceUserPresence = U2FControl(rawValue: 0x03)
    /// dont-enforce-user-presence-and-sign: signs without a touch (user presence flag clear).
    public static let dontEnforceUserPresence = U2FControl(rawValue: 0x08)
}

/// One CTAP1/U2F request message (FIDO U2F Raw Message Formats §4.1, §5.1, §6.1), encoded as
/// an extended-length command APDU (§3.1.2, as CTAPHID_MSG carries it; a PC/SC transport may
/// re-frame it as short APDUs).
public struct U2FRequest: Hashable, Sendable {
    /// The instruction.
    public var instruction: U2FInstruction
    /// P1 (the control byte for U2F_AUTHENTICATE).
    public var p1: UInt8
    /// The request data.
    public var data: [UInt8]

    /// The size of the challenge and application parameters.
    public static let parameterSize = 32

    /// U2F_REGISTER with the challenge parameter (the client data hash) and the application
    /// parameter (SHA-256 of the RP ID or AppID).
    public static func register(challenge: [UInt8], application: [UInt8]) throws(CTAP2Error) -> U2FRequest {
        try checkParameters(challenge, application)
        return U2FRequest(instruction: .register, p1: 0, data: challenge + application)
    }

    /// U2F_AUTHENTICATE of `keyHandle` (1 to 255 bytes) with `control`.
    public static func authenticate(
        _ control: U2FControl, challenge: [UInt8], application: [UInt8], keyHandle: [UInt8]
    ) throws(CTAP2Error) -> U2FRequest {
        try checkParameters(challenge, application)
        guard (1...255).contains(keyHandle.count) else {
            throw .invalidRequest("A U2F key handle is 1 to 255 bytes, not \(keyHandle.count).")
        }
        return U2FRequest(
            instruction: .authenticate, p1: control.rawValue,
            data: challenge + application + [UInt8(keyHandle.count)] + keyHandle)
    }

    /// U2F_VERSION.
    public static let version = U2FRequest(instruction: .version, p1: 0, data: [])

    private static func checkParameters(_ challenge: [UInt8], _ application: [UInt8]) throws(CTAP2Error) {
        guard challenge.count == parameterSize, application.count == parameterSize else {
            throw .invalidRequest("The U2F challenge and application parameters must be 32 bytes each.")
        }
    }

    /// The extended-length APDU: CLA 00 ‖ INS ‖ P1 ‖ P2 00 ‖ [00 ‖ Lc(2) ‖ data] ‖ Le(2 or 3)
    /// with Le asking for as many bytes as there are (§3.1.2, ISO/IEC 7816-4 §5.1).
    public var apdu: [UInt8] {
        var bytes: [UInt8] = [0x00, instruction.rawValue, p1, 0x00]
        if data.isEmpty {
            bytes += [0x00, 0x00, 0x00]
        } else {
            bytes += [0x00, UInt8(truncatingIfNeeded: data.count >> 8), UInt8(truncatingIfNeeded: data.count)]
            bytes += data
            bytes += [0x00, 0x00]
        }
        return bytes
    }
}

/// Splits a U2F response into its data and status word (§3.3): hostile bytes, checked.
func splitU2FResponse(_ reply: [UInt8], _ instruction: U2FInstruction) throws(CTAP2Error)
    -> (data: ArraySlice<UInt8>, status: U2FStatusWord)
{
    guard reply.count >= 2 else {
        throw .malformed("The security key answered \(instruction) with \(reply.count) bytes, without a status word.")
    }
    let status = U2FStatusWord(sw1: reply[reply.count - 2], sw2: reply[reply.count - 1])
    return (reply[reply.startIndex..<(reply.endIndex - 2)], status)
}
