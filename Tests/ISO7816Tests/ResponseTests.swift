import ISO7816
import Testing

@Suite struct ResponseTests {
    @Test(arguments: ["", "90"])
    func rejectsResponsesWithoutStatus(_ wire: String) {
        #expect(throws: ISO7816Error.self) { try ResponseAPDU(bytes: hex(wire)) }
    }

    @Test func splitsDataAndStatus() throws {
        let r = try ResponseAPDU(bytes: hex("5532465F56329000"))
        #expect(r.data == Array("U2F_V2".utf8))
        #expect(r.status == .success)
        #expect(r.status.sw1 == 0x90 && r.status.sw2 == 0x00)
    }

    /// Status words with the meanings ISO/IEC 7816-4 §5.6 Tables 5 and 6 and CTAP 2.1 §11.3 give.
    @Test(
        arguments: [
            (0x9000, "success"), (0x9100, "ctap"), (0x6700, "length"), (0x6982, "security"),
            (0x6985, "conditions"), (0x6A80, "data"), (0x6A82, "not have"), (0x6D00, "instruction"),
            (0x6E00, "class"), (0x6884, "chaining"),
        ] as [(Int, String)])
    func catalogueNamesStatusWords(_ raw: Int, _ word: String) {
        let sw = StatusWord(rawValue: UInt16(raw))
        let named: [StatusWord: String] = [
            .success: "success", .ctapStillProcessing: "ctap", .wrongLength: "length",
            .securityStatusNotSatisfied: "security", .conditionsNotSatisfied: "conditions",
            .incorrectData: "data", .fileNotFound: "not have", .instructionNotSupported: "instruction",
            .classNotSupported: "class", .commandChainingNotSupported: "chaining",
        ]
        #expect(named[sw] == word)
        #expect(sw.message.hasSuffix("."))
    }

    @Test func moreDataAndWrongLength() {
        #expect(StatusWord(sw1: 0x61, sw2: 0x00).bytesRemaining == 256)
        #expect(StatusWord(sw1: 0x61, sw2: 0x10).bytesRemaining == 16)
        #expect(StatusWord(sw1: 0x6C, sw2: 0x08).correctLe == 8)
        #expect(StatusWord.success.bytesRemaining == nil)
        #expect(StatusWord(rawValue: 0x6A82).description == "6A82")
        #expect(StatusWord(rawValue: 0x6A82).message != StatusWord(rawValue: 0x1234).message)
    }

    /// ISO/IEC 7816-4 §5.3.4: `61xx` is answered by GET RESPONSE with Le xx until the final
    /// status, and the pieces are joined in order.
    @Test func getResponseUntilComplete() throws {
        let command = CommandAPDU(cla: 0x80, ins: 0x10, p1: 0x80, p2: 0, data: [0x04], le: 256)
        var assembler = ResponseAssembler(command: command)
        var step = try assembler.receive(ResponseAPDU(bytes: hex("0102") + [0x61, 0x00]))
        #expect(try step == .send(CommandAPDU(bytes: hex("00C0000000"))))
        step = try assembler.receive(ResponseAPDU(bytes: hex("0304") + [0x61, 0x03]))
        #expect(try step == .send(CommandAPDU(bytes: hex("00C0000003"))))
        step = try assembler.receive(ResponseAPDU(bytes: hex("050607 9000")))
        #expect(step == .complete(ResponseAPDU(data: [1, 2, 3, 4, 5, 6, 7], status: .success)))
    }

    /// ISO/IEC 7816-3 §12.2.2: `6Cxx` means "send the same command again with Le xx".
    @Test func wrongLeIsReissued() throws {
        let command = try CommandAPDU(bytes: hex("00B0000000"))
        var assembler = ResponseAssembler(command: command)
        let step = try assembler.receive(ResponseAPDU(bytes: hex("6C08")))
        #expect(try step == .send(CommandAPDU(bytes: hex("00B0000008"))))
        let done = try assembler.receive(ResponseAPDU(bytes: hex("0102030405060708 9000")))
        #expect(done == .complete(ResponseAPDU(data: [1, 2, 3, 4, 5, 6, 7, 8], status: .success)))
    }

    @Test func errorStatusEndsTheExchange() throws {
        var assembler = ResponseAssembler(command: .select(aid: FIDOApplet.aid))
        let step = try assembler.receive(ResponseAPDU(bytes: hex("6A82")))
        #expect(step == .complete(ResponseAPDU(data: [], status: .fileNotFound)))
    }

    @Test func endlessMoreDataIsBounded() throws {
        var assembler = ResponseAssembler(command: .getResponse(le: 256), maxRounds: 8)
        #expect(throws: ISO7816Error.self) {
            for _ in 0..<9 { _ = try assembler.receive(ResponseAPDU(bytes: hex("00 6101"))) }
        }
    }
}
