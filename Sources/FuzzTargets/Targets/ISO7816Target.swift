import ISO7816

extension FuzzTarget {
    /// ISO 7816-4 APDUs: a command APDU that parses re-encodes in its own length form to the
    /// same bytes and chains into segments that carry its data; response APDUs round trip; a
    /// sequence of responses (GET RESPONSE / wrong-Le chaining, as the NFC transport drives it)
    /// ends bounded, in a request that encodes or in a complete response.
    static let iso7816 = FuzzTarget("iso7816", "command/response APDU parsing, response chaining") {
        bytes throws(FuzzPropertyViolation) in
        if let command = try? CommandAPDU(bytes: bytes) {
            let extended = bytes.count > 5 && bytes[4] == 0
            let form: CommandAPDU.LengthForm = extended ? .extended : .short
            try expect((try? command.encoded(form)) == bytes, "a command APDU does not re-encode to itself")
            // The other length form, and the shortest one, encode what parses back the same
            // (or refuse a command that does not fit).
            for encoding in [try? command.encoded(extended ? .short : .extended), try? command.encoded()] {
                if let encoding {
                    try expect(
                        (try? CommandAPDU(bytes: encoding)) == command,
                        "a command APDU changes in another form")
                }
            }
            try expect(command.isChained == (command.cla & 0x10 != 0), "the chaining bit misread")
            try expect(!command.description.isEmpty, "a command APDU without a description")
            try expect((try? command.chained(maxSegmentCount: 0)) == nil, "chaining into empty segments")
            var noLe = command
            noLe.le = 0
            try expect((try? noLe.encoded()) == nil, "a command with Le 0 encoded")
            // SELECT with the command's data as the AID encodes and parses back to itself.
            let select = CommandAPDU.select(aid: Array(command.data.prefix(CommandAPDU.maxShortDataCount)))
            try expect(
                (try? select.encoded()).flatMap { try? CommandAPDU(bytes: $0) } == select,
                "a SELECT does not parse back to itself")
            if let segments = try? command.chained(maxSegmentCount: 16) {
                try expect(
                    segments.flatMap(\.data) == command.data && segments.last?.le == command.le,
                    "command chaining loses data or Le")
            }
        }
        if let response = try? ResponseAPDU(bytes: bytes) {
            try expect(response.bytes == bytes, "a response APDU does not re-encode to itself")
            try expect(
                ResponseAPDU(data: response.data, status: response.status) == response,
                "a response APDU differs from one built from its parts")
            try expect(!response.description.isEmpty, "a response APDU without a description")
        }
        let limit = 4096
        var assembler = ResponseAssembler(
            command: CommandAPDU(cla: 0x80, ins: 0x10, p1: 0, p2: 0, data: [0x04], le: 256), maxRounds: 32,
            maxResponseCount: limit)
        for record in lengthPrefixedRecords(bytes) {
            guard let response = try? ResponseAPDU(bytes: record) else { continue }
            switch try? assembler.receive(response) {
            case .send(let next):
                try expect(
                    (try? next.encoded()) != nil, "the assembler asks for a command that does not encode")
            case .complete(let complete):
                try expect(complete.data.count <= limit, "an assembled response exceeds its limit")
                return
            case nil:
                return
            }
        }
    }
}
