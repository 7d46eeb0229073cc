import ISO7816
import Testing

/// Hex helper for vectors written as in ISO/IEC 7816-4 examples and python-fido2 traces.
func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.filter { !$0.isWhitespace })
    var out: [UInt8] = []
    var i = 0
    while i + 1 < digits.count {
        if let b = UInt8(String(digits[i...i + 1]), radix: 16) { out.append(b) }
        i += 2
    }
    return out
}

/// One command APDU vector: the wire bytes and the fields ISO/IEC 7816-4 §5.1 assigns them.
struct APDUVector: Sendable, CustomTestStringConvertible {
    var name: String
    var wire: String
    var header: [UInt8]
    var data: [UInt8]
    var le: Int?
    var form: CommandAPDU.LengthForm
    var testDescription: String { name }
}

/// Cases 1, 2S, 3S, 4S, 2E, 3E, 4E, with bytes laid out by hand from ISO/IEC 7816-4 §5.1 and,
/// where noted, python-fido2's `CtapPcscDevice` traces.
let apduVectors: [APDUVector] = [
    APDUVector(
        name: "case 1", wire: "00A40400", header: [0x00, 0xA4, 0x04, 0x00], data: [], le: nil, form: .short),
    APDUVector(
        name: "case 2S Le=16", wire: "00C0000010", header: [0x00, 0xC0, 0x00, 0x00], data: [], le: 16,
        form: .short),
    APDUVector(
        name: "case 2S Le=256", wire: "00C0000000", header: [0x00, 0xC0, 0x00, 0x00], data: [], le: 256,
        form: .short),
    // python-fido2 _select: SELECT with the FIDO AID and no Le.
    APDUVector(
        name: "case 3S SELECT FIDO (python-fido2)", wire: "00A4040008A0000006472F0001",
        header: [0x00, 0xA4, 0x04, 0x00], data: hex("A0000006472F0001"), le: nil, form: .short),
    // python-fido2 _call_cbor(getInfo): NFCCTAP_MSG, P1 0x80, data 04, Le 00.
    APDUVector(
        name: "case 4S NFCCTAP_MSG getInfo (python-fido2)", wire: "801080000104" + "00",
        header: [0x80, 0x10, 0x80, 0x00], data: [0x04], le: 256, form: .short),
    APDUVector(
        name: "case 2E Le=256", wire: "00B00000000100", header: [0x00, 0xB0, 0x00, 0x00], data: [], le: 256,
        form: .extended),
    APDUVector(
        name: "case 2E Le=65536", wire: "00B00000000000", header: [0x00, 0xB0, 0x00, 0x00], data: [],
        le: 65536, form: .extended),
    APDUVector(
        name: "case 3E 256 bytes", wire: "80100000000100" + String(repeating: "AB", count: 256),
        header: [0x80, 0x10, 0x00, 0x00], data: Array(repeating: 0xAB, count: 256), le: nil, form: .extended),
    // python-fido2 use_ext_apdu: header "!BBBBBH" then data, no Le.
    APDUVector(
        name: "case 3E getInfo (python-fido2 extended)", wire: "80108000000001" + "04",
        header: [0x80, 0x10, 0x80, 0x00], data: [0x04], le: nil, form: .extended),
    APDUVector(
        name: "case 4E Le=65536", wire: "80100000000001040000",
        header: [0x80, 0x10, 0x00, 0x00], data: [0x04], le: 65536, form: .extended),
]

@Suite struct CommandAPDUTests {
    @Test(arguments: apduVectors)
    func parsesEveryCase(_ v: APDUVector) throws {
        let apdu = try CommandAPDU(bytes: hex(v.wire))
        #expect([apdu.cla, apdu.ins, apdu.p1, apdu.p2] == v.header)
        #expect(apdu.data == v.data)
        #expect(apdu.le == v.le)
    }

    @Test(arguments: apduVectors)
    func encodesEveryCase(_ v: APDUVector) throws {
        let apdu = CommandAPDU(
            cla: v.header[0], ins: v.header[1], p1: v.header[2], p2: v.header[3], data: v.data, le: v.le)
        #expect(try apdu.encoded(v.form) == hex(v.wire))
    }

    @Test func shortestFormIsChosen() throws {
        let small = CommandAPDU(cla: 0x80, ins: 0x10, p1: 0, p2: 0, data: [0x04], le: 256)
        #expect(try small.encoded() == hex("80100000010400"))
        let big = CommandAPDU(cla: 0x80, ins: 0x10, p1: 0, p2: 0, data: Array(repeating: 1, count: 300))
        #expect(try big.encoded().prefix(7) == hex("80100000 00012C")[...])
    }

    @Test func shortFormRejectsWhatDoesNotFit() {
        let big = CommandAPDU(cla: 0, ins: 0, p1: 0, p2: 0, data: Array(repeating: 0, count: 256))
        #expect(throws: ISO7816Error.self) { try big.encoded(.short) }
        let bigLe = CommandAPDU(cla: 0, ins: 0, p1: 0, p2: 0, le: 257)
        #expect(throws: ISO7816Error.self) { try bigLe.encoded(.short) }
        let huge = CommandAPDU(cla: 0, ins: 0, p1: 0, p2: 0, data: Array(repeating: 0, count: 65536))
        #expect(throws: ISO7816Error.self) { try huge.encoded(.extended) }
    }

    @Test(arguments: [
        "", "00", "00A404",  // shorter than a header
        "00A40400050102",  // Lc 5, two bytes follow
        "00A40400020102030405",  // Lc 2, four bytes follow
        "00A404000000",  // extended length cut short
        "00A40400000000" + "01",  // extended Lc 0 with data
        "00A4040000000201",  // extended Lc 2, one byte follows
    ])
    func rejectsMalformedCommands(_ wire: String) {
        #expect(throws: ISO7816Error.self) { try CommandAPDU(bytes: hex(wire)) }
    }

    /// python-fido2's `_chain_apdus` splits at 250 bytes: CLA|0x10 without Le on every segment
    /// but the last, which carries Le 00.
    @Test func chainsLikePythonFIDO2() throws {
        let data = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        let apdu = CommandAPDU(cla: 0x80, ins: 0x10, p1: 0x80, p2: 0x00, data: data, le: 256)
        let wire = try apdu.chained(maxSegmentCount: 250).map { s throws(ISO7816Error) in
            try s.encoded(.short)
        }
        #expect(wire.count == 3)
        #expect(wire[0] == hex("90108000FA") + data[0..<250])
        #expect(wire[1] == hex("90108000FA") + data[250..<500])
        #expect(wire[2] == hex("8010800064") + data[500..<600] + [0x00])
    }

    @Test func chainingKeepsSmallCommandsWhole() throws {
        let apdu = CommandAPDU(cla: 0x80, ins: 0x10, p1: 0, p2: 0, data: [1, 2, 3], le: 256)
        #expect(try apdu.chained() == [apdu])
        #expect(try apdu.chained()[0].isChained == false)
    }

    @Test func selectFIDOApplet() throws {
        #expect(try CommandAPDU.select(aid: FIDOApplet.aid).encoded() == hex("00A4040008A0000006472F0001 00"))
    }
}
