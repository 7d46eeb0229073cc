import Foundation
import ArgumentParser
import CTAP2
import SecurityKeys

/// Options register and authenticate share: the relying party and the client data.
struct CeremonyOptions: ParsableArguments {
    @Option(
        name: .long, help: ArgumentHelp("The relying party ID (a domain, e.g. example.org).", valueName: "id")
    )
    var rp: String

    @Option(
        name: .long, help: ArgumentHelp("The challenge, base64url (random when absent).", valueName: "b64url")
    )
    var challenge: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The origin of the client data (default https://RP).", valueName: "url"))
    var origin: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Sign this client data hash (32 bytes, base64 or base64url) instead of building client data.",
            valueName: "b64"))
    var clientDataHash: String?

    @Flag(name: .long, help: "Ask for user verification (PIN or built-in).")
    var uv = false

    @Flag(name: .long, help: "Read the PIN from standard input instead of the terminal.")
    var pinStdin = false

    func validate() throws {
        if clientDataHash != nil, challenge != nil || origin != nil {
            throw ValidationError("--client-data-hash excludes --challenge and --origin.")
        }
    }

    /// The client data: built by the provider from the origin (default https://RP, checked
    /// against the RP ID there) and the challenge (random when absent), or the hash given.
    func clientData() throws -> WebAuthnClientData {
        if let clientDataHash {
            guard let hash = decodeBase64Any(clientDataHash), hash.count == 32 else {
                throw CLIError.usage("--client-data-hash must be 32 bytes in base64 or base64url.")
            }
            return .hash(hash)
        }
        let challengeBytes: [UInt8]
        if let challenge {
            guard let bytes = Base64URL.decode(challenge), bytes.count >= 16 else {
                throw CLIError.usage("--challenge must be base64url of at least 16 bytes.")
            }
            challengeBytes = bytes
        } else {
            challengeBytes = randomBytes(32)
        }
        return .origin(origin ?? "https://\(rp)", challenge: challengeBytes)
    }

    /// The provider's user verification preference: required with `--uv`, else only when the
    /// key insists (as browsers do for 'discouraged').
    var userVerification: UserVerificationPreference { uv ? .required : .discouraged }

    /// Reads PINs as `--pin-stdin` says.
    var pinReader: PINReader { PINReader(fromStandardInput: pinStdin) }
}

/// Cryptographically random bytes.
func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

/// Decodes standard base64 or base64url, padded or not.
func decodeBase64Any(_ text: String) -> [UInt8]? {
    Base64URL.decode(
        text.trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))
}

/// Parses `--alg` names: es256, es384, es512, eddsa, ed25519, rs256, ps256, or a COSE number.
func parseAlgorithm(_ text: String) throws(CLIError) -> COSEAlgorithm {
    switch text.lowercased() {
    case "es256": return .es256
    case "es384": return .es384
    case "es512": return .es512
    case "eddsa": return .edDSA
    case "ed25519": return .ed25519
    case "rs256": return .rs256
    case "ps256": return .ps256
    default:
        guard let n = Int(text) else {
            throw CLIError.usage(
                "Unknown algorithm \"\(text)\"; use es256, es384, es512, eddsa, rs256, ps256 or a COSE number."
            )
        }
        return COSEAlgorithm(rawValue: n)
    }
}
