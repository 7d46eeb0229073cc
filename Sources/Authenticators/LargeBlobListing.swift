import _SecurityKeyInternals
import CBOR
import CTAP2
import Transport

/// One element of a key's large-blob array as `securitykey largeblob list` shows it: the entry
/// (nil when the element is not a well-formed entry), the credential whose largeBlobKey opens it
/// (nil when no known key does), and why it is damaged when that key opens it but its content
/// does not decompress (CTAP 2.1 §6.10.3).
public struct LargeBlobListing: Hashable, Sendable {
    /// The element's index in the array.
    public var index: Int
    /// The element as an entry, nil when it is something else (kept as it is on writes).
    public var entry: LargeBlobEntry?
    /// The first of the credentials given whose largeBlobKey opens the entry.
    public var owner: LargeBlobCredential?
    /// Why the entry is damaged, when its owner's key opens it but the content is bad.
    public var damage: String?

    /// Lists element `index` of `array`, trying each of `credentials`' largeBlobKeys in turn.
    public init(index: Int, array: LargeBlobArray, credentials: [LargeBlobCredential]) {
        self.index = index
        entry = array.entry(at: index)
        guard let entry else { return }
        for credential in credentials {
            switch entry.open(key: credential.largeBlobKey) {
            case .otherKey: continue
            case .damaged(let reason): damage = reason
            case .data: break
            }
            owner = credential
            break
        }
    }

    /// Every element of `array`, in order.
    public static func all(_ array: LargeBlobArray, credentials: [LargeBlobCredential]) -> [LargeBlobListing] {
        array.elements.indices.map { LargeBlobListing(index: $0, array: array, credentials: credentials) }
    }

    /// The element as a JSON document (`largeblob list --json`'s `entries`): index, whether it is
    /// an entry, ciphertext size, nonce (hex), original size, the owner's credential ID
    /// (base64url), RP ID and user name, and the damage (null where they do not apply).
    public var json: JSONValue {
        .members([
            ("index", .integer(Int64(index))), ("entry", .bool(entry != nil)),
            ("ciphertextSize", entry.map { .integer(Int64($0.ciphertext.count)) } ?? .null),
            ("nonce", entry.map { .string(Hex.encode($0.nonce)) } ?? .null),
            ("origSize", entry.map { .unsigned($0.originalSize) } ?? .null),
            ("credentialId", owner.map { .string(Base64URL.encode($0.credential.credentialID.id)) } ?? .null),
            ("rpId", owner.map { .string($0.rpID) } ?? .null),
            ("userName", owner?.credential.user.name.map(JSONValue.string) ?? .null),
            ("damaged", damage.map(JSONValue.string) ?? .null),
        ])
    }

    /// The element in one line, for people.
    public var summary: String {
        guard let entry else { return "  #\(index)  not a large-blob entry (kept as it is)" }
        var text = "  #\(index)  \(entry.originalSize) bytes (\(entry.ciphertext.count) stored)"
        text += "  nonce \(Hex.encode(entry.nonce))"
        if let owner {
            text += "  \(owner.rpID) \(Base64URL.encode(owner.credential.credentialID.id))"
            if let name = owner.credential.user.name { text += " (\(name))" }
        } else {
            text += "  (no known credential)"
        }
        if let damage { text += "  damaged: \(damage)" }
        return text
    }
}

/// A key's large-blob array as `securitykey largeblob list` shows it: the reading (size and
/// corruption), the most the key stores, and each element with its owner where known.
public struct LargeBlobInventory: Hashable, Sendable {
    /// The array as read.
    public var reading: LargeBlobArray.Reading
    /// The key's maxSerializedLargeBlobArray (1024 when it does not say, CTAP 2.1 §6.4).
    public var maxSize: UInt64
    /// The array's elements.
    public var entries: [LargeBlobListing]

    /// The inventory of the key at `device` as a JSON document (`largeblob list --json`):
    /// device, size, maxSize, corrupted (null or {code, message}) and the entries.
    public func json(device: String) -> JSONValue {
        .members([
            ("device", .string(device)), ("size", .integer(Int64(reading.serializedLength))),
            ("maxSize", .unsigned(maxSize)), ("corrupted", reading.corruption?.json ?? .null),
            ("entries", .array(entries.map(\.json))),
        ])
    }
}

extension Authenticator {
    /// The large-blob array and its elements. With `matchingCredentials`, on a key that has
    /// credential management and verifies users, and only when the array holds something, the
    /// credentials' largeBlobKeys are read (a token, so the PIN is asked) to name each entry's
    /// owner.
    public func largeBlobInventory(
        matchingCredentials: Bool, interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> LargeBlobInventory {
        let reading = try await largeBlobArray(deadline: deadline)
        var credentials: [LargeBlobCredential] = []
        if matchingCredentials, supportsCredentialManagement, canVerifyUser, !reading.array.elements.isEmpty {
            credentials = try await largeBlobCredentials(interaction: interaction, deadline: deadline)
        }
        return LargeBlobInventory(
            reading: reading,
            maxSize: info.maxSerializedLargeBlobArray ?? UInt64(LargeBlobs.defaultMaxSerializedLength),
            entries: LargeBlobListing.all(reading.array, credentials: credentials))
    }
}
