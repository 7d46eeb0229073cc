import _SecurityKeyInternals
import CBOR
import Crypto
import FoundationEssentials

/// A credential's client data as a relying party receives it: the clientDataJSON the
/// signatures cover, or only its hash when a lower layer (CTAP) made the request.
public enum ClientDataInput: Sendable, Hashable {
    /// The clientDataJSON bytes (WebAuthn §5.8.1).
    case json([UInt8])
    /// Only the SHA-256 of client data: nothing in it can be checked here, so a policy that
    /// expects a challenge or origins refuses it.
    case hash([UInt8])
}

/// The members of a clientDataJSON the checks read (WebAuthn §5.8.1 CollectedClientData).
struct ClientData {
    /// The parsed object, for messages that quote what was sent.
    let object: JSONValue
    /// SHA-256 of the JSON bytes (§7.1 step 20).
    let hash: [UInt8]

    /// Parses clientDataJSON; §7.1 step 5 asks for a JSON object.
    init(json bytes: [UInt8]) throws(WebAuthnVerificationError) {
        guard let object = JSONValue.object(decoding: bytes) else {
            throw WebAuthnVerificationError(.malformedClientData, "The clientDataJSON is not a JSON object.")
        }
        self.object = object
        self.hash = Array(SHA256.hash(data: bytes))
    }

    /// How a member reads in a message: as sent, or "missing".
    private func quoted(_ key: String) -> String { object[member: key]?.quotable ?? "missing" }

    /// WebAuthn §7.1 steps 7-11 (§7.2 steps 11-15).
    func check(type: String, policy: RelyingPartyPolicy) throws(WebAuthnVerificationError) {
        guard object[member: "type"]?.stringValue == type else {
            throw WebAuthnVerificationError(
                .clientDataTypeMismatch, "The client data's type is \(quoted("type")), not \(type).")
        }
        if let challenge = policy.challenge, object[member: "challenge"]?.stringValue != Base64URL.encode(challenge) {
            throw WebAuthnVerificationError(
                .challengeMismatch, "The client data's challenge is not the expected one.")
        }
        if let origins = policy.origins {
            guard let origin = object[member: "origin"]?.stringValue, origins.contains(origin) else {
                throw WebAuthnVerificationError(
                    .originMismatch,
                    "The client data's origin is \(quoted("origin")), not \(expected(origins)).")
            }
        }
        let crossOrigin = object[member: "crossOrigin"]?.boolValue ?? false
        let topOrigin = object[member: "topOrigin"]?.stringValue
        switch policy.crossOrigin {
        case .unchecked:
            break
        case .sameOriginOnly:
            guard !crossOrigin, object[member: "topOrigin"] == nil else {
                throw WebAuthnVerificationError(
                    .crossOriginNotAllowed, "The ceremony ran in a cross-origin iframe, which is not allowed."
                )
            }
        case .allowed(let topOrigins):
            if let topOrigins, object[member: "topOrigin"] != nil {
                guard let topOrigin, topOrigins.contains(topOrigin) else {
                    throw WebAuthnVerificationError(
                        .crossOriginNotAllowed,
                        "The client data's topOrigin is \(quoted("topOrigin")), not \(expected(topOrigins)).")
                }
            }
        }
    }

    private func expected(_ values: Set<String>) -> String {
        values.count == 1 ? values.first ?? "" : "one of " + values.sorted().joined(separator: ", ")
    }
}

extension ClientDataInput {
    /// Checks the client data against `policy` for a ceremony of `type` and returns the hash
    /// the signatures cover.
    func checkedHash(type: String, policy: RelyingPartyPolicy) throws(WebAuthnVerificationError) -> [UInt8] {
        switch self {
        case .json(let bytes):
            let clientData = try ClientData(json: bytes)
            try clientData.check(type: type, policy: policy)
            return clientData.hash
        case .hash(let hash):
            guard policy.challenge == nil, policy.origins == nil else {
                throw WebAuthnVerificationError(
                    .malformedClientData,
                    "The response holds only a client data hash, so its challenge and origin cannot be checked."
                )
            }
            guard hash.count == 32 else {
                throw WebAuthnVerificationError(
                    .invalidClientDataHash, "The client data hash must be 32 bytes, not \(hash.count).")
            }
            return hash
        }
    }
}
