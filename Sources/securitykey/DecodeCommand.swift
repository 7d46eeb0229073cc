import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
import Crypto
import FoundationEssentials
import SecurityKeys

extension StructureDecoder.Kind: ExpressibleByArgument {}

/// `securitykey decode`: turns captured bytes into JSON.
struct DecodeCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract:
            "Decode CTAP and WebAuthn structures (CBOR, attestationObject, authenticatorData, ...) into JSON.",
        discussion: """
            The input is --hex TEXT, --base64 TEXT (standard or url alphabet), or a FILE (- or nothing \
            for standard input); a file holding only hex digits and whitespace is read as hex. --as may \
            be omitted when the input can be recognised, and CBOR that only looks like a known structure \
            is shown as generic CBOR with a "note" saying why; the JSON that register --json and authenticate --json print \
            (WebAuthn RegistrationResponseJSON, AuthenticationResponseJSON) is recognised and its parts \
            decoded. The output is JSON with a "kind" member; credential IDs and user handles in base64url \
            (as every other command prints and takes them), AAGUIDs as UUIDs, other byte strings in \
            lower-case hex; CBOR values also come in diagnostic notation (RFC 8949 §8). A ctaphid input is \
            a stream of 64-byte reports, reassembled into messages and each message decoded. Malformed \
            input exits 1 with the reason.
            """)

    @Option(name: .customLong("as"), help: ArgumentHelp("What the input is.", valueName: "kind"))
    var kind: StructureDecoder.Kind?

    @Option(name: .long, help: ArgumentHelp("The input as hex.", valueName: "hex"))
    var hex: String?

    @Option(name: .long, help: ArgumentHelp("The input as base64 or base64url.", valueName: "base64"))
    var base64: String?

    @Argument(help: ArgumentHelp("A file to decode, or - (the default) for standard input.", valueName: "file"))
    var file: String?

    @Flag(name: .long, help: "Print structured JSON (the default output is the same JSON).")
    var json = false

    var wantsJSON: Bool { json }

    func validate() throws {
        let sources = [hex != nil, base64 != nil, file != nil].filter { $0 }.count
        guard sources <= 1 else {
            throw ValidationError("Give one input: --hex, --base64, or a file (- or nothing for standard input).")
        }
    }

    func execute() async throws {
        let bytes = try input()
        Console.json(try StructureDecoder.decode(bytes, as: kind))
    }

    private func input() throws -> [UInt8] {
        if let hex {
            guard let bytes = Hex.decode(hex, lenient: true) else {
                throw CLIError.invalidInput("The --hex input is not hexadecimal.")
            }
            return bytes
        }
        if let base64 {
            guard let bytes = Base64.decodeEitherAlphabet(base64) else {
                throw CLIError.invalidInput("The --base64 input is not base64 or base64url.")
            }
            return bytes
        }
        return StructureDecoder.input(fromFile: try readInput(file ?? "-"))
    }
}
