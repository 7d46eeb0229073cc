import Crypto

extension VirtualKey {
    /// CTAP1/U2F instructions (FIDO U2F Raw Message Formats §4–§6).
    enum U2FInstruction {
        static let register: UInt8 = 0x01
        static let authenticate: UInt8 = 0x02
        static let version: UInt8 = 0x03
    }

    /// U2F_AUTHENTICATE control bytes (FIDO U2F Raw Message Formats §5.1).
    enum U2FControl {
        static let checkOnly: UInt8 = 0x07
        static let enforceUserPresence: UInt8 = 0x03
        static let dontEnforceUserPresence: UInt8 = 0x08
    }

    /// ISO 7816-4 status words used by U2F (FIDO U2F Raw Message Formats §3.3).
    enum U2FStatusWord {
        static let noError: [UInt8] = [0x90, 0x00]
        static let conditionsNotSatisfied: [UInt8] = [0x69, 0x85]
        static let wrongData: [UInt8] = [0x6A, 0x80]
        static let wrongLength: [UInt8] = [0x67, 0x00]
        static let instructionNotSupported: [UInt8] = [0x6D, 0x00]
        static let classNotSupported: [UInt8] = [0x6E, 0x00]
        static let unknown: [UInt8] = [0x6F, 0x00]
    }

    /// Handles one CTAP1/U2F request APDU (short or extended length) and returns response data
    /// followed by the status word. Register and authenticate use the same sealed key handles
    /// as CTAP2 credential IDs, so a U2F registration also works with getAssertion.
    public func handleU2F(_ apdu: [UInt8]) async -> [UInt8] {
        guard let request = U2FRequest(apdu) else { return U2FStatusWord.wrongLength }
        guard request.cla == 0 else { return U2FStatusWord.classNotSupported }
        switch request.ins {
        case U2FInstruction.version:
            guard request.data.isEmpty else { return U2FStatusWord.wrongLength }
            return Array("U2F_V2".utf8) + U2FStatusWord.noError
        case U2FInstruction.register where alwaysUVEnabled, U2FInstruction.authenticate where alwaysUVEnabled:
            // U2F cannot verify the user, so alwaysUv turns it off (CTAP 2.1 §6.11.2).
            return U2FStatusWord.instructionNotSupported
        case U2FInstruction.register:
            return u2fRegister(request.data)
        case U2FInstruction.authenticate:
            return u2fAuthenticate(request.data, control: request.p1)
        default:
            return U2FStatusWord.instructionNotSupported
        }
    }

    /// U2F has no keepalive: the platform repeats the request until the user touched the key,
    /// getting "conditions not satisfied" meanwhile (FIDO U2F Raw Message Formats §4.3).
    private func u2fUserPresent() -> Bool {
        switch userPresence {
        case .approve:
            u2fPresenceRequested = nil
            return true
        case .deny, .never:
            return false
        case .approveAfter(let delay):
            let start = u2fPresenceRequested ?? now
            if now - start >= delay {
                u2fPresenceRequested = nil
                return true
            }
            u2fPresenceRequested = start
            return false
        }
    }

    private func u2fRegister(_ data: [UInt8]) -> [UInt8] {
        guard data.count == 64 else { return U2FStatusWord.wrongLength }
        let challenge = Array(data[0..<32])
        let application = Array(data[32..<64])
        guard u2fUserPresent() else { return U2FStatusWord.conditionsNotSatisfied }
        guard let (seed, key) = CredentialPrivateKey.generate(algorithm: .es256).map({ ($0.seed, $0.key) }),
            case .p256(let p256) = key.key,
            let keyHandle = try? CredentialID.seal(
                algorithm: .es256, seed: seed, rpIDHash: application, wrappingKey: wrappingKey)
        else { return U2FStatusWord.unknown }
        let publicKey = Array(p256.publicKey.x963Representation)
        let signed = [0x00] + application + challenge + keyHandle + publicKey
        guard let signature = try? attestationKey.signature(for: signed).derRepresentation else {
            return U2FStatusWord.unknown
        }
        return [0x05] + publicKey + [UInt8(keyHandle.count)] + keyHandle + attestationCertificateDER
            + Array(signature) + U2FStatusWord.noError
    }

    private func u2fAuthenticate(_ data: [UInt8], control: UInt8) -> [UInt8] {
        guard data.count >= 65, data.count == 65 + Int(data[64]) else { return U2FStatusWord.wrongLength }
        let challenge = Array(data[0..<32])
        let application = Array(data[32..<64])
        let keyHandle = Array(data[65...])
        guard let opened = CredentialID.open(keyHandle, rpIDHash: application, wrappingKey: wrappingKey),
            opened.algorithm == .es256,
            let key = CredentialPrivateKey(algorithm: opened.algorithm, seed: opened.seed)
        else { return U2FStatusWord.wrongData }
        let flags: AuthenticatorData.Flags
        switch control {
        case U2FControl.checkOnly:
            return U2FStatusWord.conditionsNotSatisfied
        case U2FControl.enforceUserPresence:
            guard u2fUserPresent() else { return U2FStatusWord.conditionsNotSatisfied }
            flags = .userPresent
        case U2FControl.dontEnforceUserPresence:
            flags = []
        default:
            return U2FStatusWord.wrongData
        }
        let counter = nextSignatureCount(credentialID: keyHandle)
        let counterBytes = [
            UInt8(counter >> 24), UInt8(truncatingIfNeeded: counter >> 16),
            UInt8(truncatingIfNeeded: counter >> 8), UInt8(truncatingIfNeeded: counter),
        ]
        guard let signature = try? key.sign(application + [flags.rawValue] + counterBytes + challenge),
            (try? persist()) != nil
        else { return U2FStatusWord.unknown }
        return [flags.rawValue] + counterBytes + signature + U2FStatusWord.noError
    }
}

/// A command APDU (ISO 7816-4 §5.1) in short or extended form.
struct U2FRequest {
    let cla: UInt8
    let ins: UInt8
    let p1: UInt8
    let p2: UInt8
    let data: [UInt8]

    init?(_ apdu: [UInt8]) {
        guard apdu.count >= 4 else { return nil }
        cla = apdu[0]
        ins = apdu[1]
        p1 = apdu[2]
        p2 = apdu[3]
        let body = apdu[4...]
        switch body.count {
        case 0, 1:
            data = []  // Case 1, or case 2 short (Le only).
        case 3 where body[4] == 0:
            data = []  // Case 2 extended (Le only).
        default:
            if body[4] != 0 {
                let length = Int(body[4])
                let rest = body.count - 1 - length
                guard rest == 0 || rest == 1 else { return nil }
                data = Array(body[5..<(5 + length)])
            } else {
                guard body.count >= 3 else { return nil }
                let length = Int(body[5]) << 8 | Int(body[6])
                let rest = body.count - 3 - length
                // An empty extended Lc (`00 0000`) followed by Le is not ISO 7816-4, but it is
                // how libfido2 and python-fido2 send U2F_VERSION, so U2F keys accept it.
                guard length > 0 ? (rest == 0 || rest == 2) : rest == 2 else { return nil }
                data = Array(body[7..<(7 + length)])
            }
        }
    }
}
