import _SecurityKeyInternals

/// A command APDU (ISO/IEC 7816-4 §5.1): a four-byte header, optional data, optional Le.
public struct CommandAPDU: Hashable, Sendable, CustomStringConvertible {
    /// How Lc and Le are encoded (ISO/IEC 7816-4 §5.1).
    public struct LengthForm: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// One-byte Lc (1...255) and Le (1...256).
        public static let short = LengthForm(rawValue: 1)
        /// Three-byte Lc (1...65535) and two- or three-byte Le (1...65536).
        public static let extended = LengthForm(rawValue: 2)
    }

    /// Largest data field of a short APDU.
    public static let maxShortDataCount = 255
    /// Largest Le of a short APDU (encoded as `00`).
    public static let maxShortLe = 256
    /// Largest data field of an extended APDU.
    public static let maxExtendedDataCount = 65535
    /// Largest Le of an extended APDU (encoded as `0000`).
    public static let maxExtendedLe = 65536
    /// The chaining bit of an interindustry CLA (ISO/IEC 7816-4 §5.4.1): more segments follow.
    public static let chainingBit: UInt8 = 0x10

    /// Class byte.
    public var cla: UInt8
    /// Instruction byte.
    public var ins: UInt8
    /// First parameter byte.
    public var p1: UInt8
    /// Second parameter byte.
    public var p2: UInt8
    /// Command data (Lc is its count).
    public var data: [UInt8]
    /// Expected response length, or nil for no Le field. 256 (short) or 65536 (extended) means
    /// "as many as there are".
    public var le: Int?

    /// Creates a command.
    public init(cla: UInt8, ins: UInt8, p1: UInt8, p2: UInt8, data: [UInt8] = [], le: Int? = nil) {
        self.cla = cla
        self.ins = ins
        self.p1 = p1
        self.p2 = p2
        self.data = data
        self.le = le
    }

    /// True when the chaining bit says more segments of this command follow.
    public var isChained: Bool { cla & Self.chainingBit != 0 }

    /// The shortest form that can carry this command.
    public var minimumForm: LengthForm {
        data.count > Self.maxShortDataCount || (le ?? 0) > Self.maxShortLe ? .extended : .short
    }

    /// Encodes the command in the shortest form that fits.
    public func encoded() throws(ISO7816Error) -> [UInt8] {
        try encoded(minimumForm)
    }

    /// Encodes the command in `form`.
    public func encoded(_ form: LengthForm) throws(ISO7816Error) -> [UInt8] {
        var out: [UInt8] = [cla, ins, p1, p2]
        if let le, le < 1 {
            throw ISO7816Error(.malformedCommand, "Le must be at least 1 (got \(le)).")
        }
        if form == .extended {
            guard data.count <= Self.maxExtendedDataCount, (le ?? 0) <= Self.maxExtendedLe else {
                throw ISO7816Error(.tooLong, "The command does not fit an extended APDU.")
            }
            out.reserveCapacity(4 + 3 + data.count + 2)
            if !data.isEmpty {
                out += [0, UInt8(truncatingIfNeeded: data.count >> 8), UInt8(truncatingIfNeeded: data.count)]
                out += data
                if let le {
                    out += [UInt8(truncatingIfNeeded: le >> 8), UInt8(truncatingIfNeeded: le)]
                }
            } else if let le {
                out += [0, UInt8(truncatingIfNeeded: le >> 8), UInt8(truncatingIfNeeded: le)]
            }
        } else {
            guard data.count <= Self.maxShortDataCount, (le ?? 0) <= Self.maxShortLe else {
                throw ISO7816Error(.tooLong, "The command does not fit a short APDU.")
            }
            out.reserveCapacity(4 + 1 + data.count + 1)
            if !data.isEmpty {
                out.append(UInt8(data.count))
                out += data
            }
            if let le { out.append(UInt8(truncatingIfNeeded: le)) }
        }
        return out
    }

    /// Parses a command APDU in any of the seven cases (1, 2S, 3S, 4S, 2E, 3E, 4E).
    public init(bytes: [UInt8]) throws(ISO7816Error) {
        guard bytes.count >= 4 else {
            throw ISO7816Error(.malformedCommand, "A command APDU needs at least 4 header bytes.")
        }
        self.init(cla: bytes[0], ins: bytes[1], p1: bytes[2], p2: bytes[3])
        let body = bytes.count - 4
        if body == 0 { return }
        let b4 = Int(bytes[4])
        if body == 1 {
            le = b4 == 0 ? Self.maxShortLe : b4
            return
        }
        if b4 != 0 {
            if body == 1 + b4 {
                data = Array(bytes[5..<(5 + b4)])
                return
            }
            if body == 2 + b4 {
                data = Array(bytes[5..<(5 + b4)])
                let leByte = Int(bytes[5 + b4])
                le = leByte == 0 ? Self.maxShortLe : leByte
                return
            }
            throw ISO7816Error(.malformedCommand, "The short APDU's length does not match its Lc.")
        }
        guard body >= 3 else {
            throw ISO7816Error(.malformedCommand, "The extended APDU's length field is truncated.")
        }
        let n = Int(bytes[5]) << 8 | Int(bytes[6])
        if body == 3 {
            le = n == 0 ? Self.maxExtendedLe : n
            return
        }
        guard n != 0 else {
            throw ISO7816Error(.malformedCommand, "The extended APDU declares an empty data field.")
        }
        if body == 3 + n {
            data = Array(bytes[7..<(7 + n)])
            return
        }
        if body == 5 + n {
            data = Array(bytes[7..<(7 + n)])
            let leValue = Int(bytes[7 + n]) << 8 | Int(bytes[8 + n])
            le = leValue == 0 ? Self.maxExtendedLe : leValue
            return
        }
        throw ISO7816Error(.malformedCommand, "The extended APDU's length does not match its Lc.")
    }

    /// Splits the command into short-form segments for command chaining (ISO/IEC 7816-4 §5.4.1):
    /// every segment but the last has the chaining bit set and no Le; the last carries Le.
    public func chained(maxSegmentCount: Int = CommandAPDU.maxShortDataCount) throws(ISO7816Error)
        -> [CommandAPDU]
    {
        guard (1...Self.maxShortDataCount).contains(maxSegmentCount) else {
            throw ISO7816Error(.tooLong, "A chaining segment holds 1 to 255 bytes.")
        }
        guard (le ?? 0) <= Self.maxShortLe else {
            throw ISO7816Error(.tooLong, "A chained command's Le must fit a short APDU.")
        }
        if data.count <= maxSegmentCount { return [self] }
        var segments: [CommandAPDU] = []
        segments.reserveCapacity(data.count / maxSegmentCount + 1)
        var start = 0
        while start < data.count {
            let end = min(start + maxSegmentCount, data.count)
            let last = end == data.count
            segments.append(
                CommandAPDU(
                    cla: last ? cla : cla | Self.chainingBit, ins: ins, p1: p1, p2: p2,
                    data: Array(data[start..<end]), le: last ? le : nil))
            start = end
        }
        return segments
    }

    /// SELECT by DF name (application identifier), first or only occurrence, FCI optional
    /// (ISO/IEC 7816-4 §11.2.2).
    public static func select(aid: [UInt8]) -> CommandAPDU {
        CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: aid, le: maxShortLe)
    }

    /// GET RESPONSE for `le` bytes (ISO/IEC 7816-4 §11.7.1).
    public static func getResponse(le: Int) -> CommandAPDU {
        CommandAPDU(cla: 0x00, ins: 0xC0, p1: 0x00, p2: 0x00, le: le)
    }

    public var description: String {
        var s = Hex.encode([cla, ins, p1, p2], uppercase: true, separator: " ") + " Lc=\(data.count)"
        if let le { s += " Le=\(le)" }
        return s
    }
}

/// The instruction bytes this package sends or answers.
public struct Instruction: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// SELECT (ISO/IEC 7816-4 §11.2.2).
    public static let select = Instruction(rawValue: 0xA4)
    /// GET RESPONSE (ISO/IEC 7816-4 §11.7.1).
    public static let getResponse = Instruction(rawValue: 0xC0)
    /// NFCCTAP_MSG (CTAP 2.1 §11.3.3): a CTAP2 message.
    public static let nfcctapMessage = Instruction(rawValue: 0x10)
    /// NFCCTAP_GETRESPONSE (CTAP 2.1 §11.3.3): poll a pending CTAP2 message, or cancel it.
    public static let nfcctapGetResponse = Instruction(rawValue: 0x11)
    /// U2F_REGISTER (FIDO U2F raw message formats §4).
    public static let u2fRegister = Instruction(rawValue: 0x01)
    /// U2F_AUTHENTICATE (FIDO U2F raw message formats §5).
    public static let u2fAuthenticate = Instruction(rawValue: 0x02)
    /// U2F_VERSION (FIDO U2F raw message formats §6).
    public static let u2fVersion = Instruction(rawValue: 0x03)
}
