import _SecurityKeyInternals
import CBOR
import Crypto

extension CTAPCommand {
    /// authenticatorLargeBlobs (§6.10).
    public static let largeBlobs = CTAPCommand(rawValue: 0x0C)
}


extension VirtualKey.CommandHandler {
    /// authenticatorLargeBlobs, offered with the `largeBlobs` option. Its token permission,
    /// lbw, comes with the same option.
    static let largeBlobs = VirtualKey.CommandHandler(
        .largeBlobs, name: "largeBlobs", isOffered: { $0.supportsLargeBlobs },
        grants: { configuration, _ in configuration.options["largeBlobs"] == true ? .largeBlobWrite : [] }
    ) { (key, parameters, _, _) async throws(VirtualKeyError) -> CBORMap? in
        try key.largeBlobs(parameters)
    }
}

extension CTAPStatus {
    /// CTAP1_ERR_INVALID_SEQ: a large-blob fragment is not the one expected next.
    public static let invalidSequence = CTAPStatus(rawValue: 0x04)
    /// CTAP2_ERR_LARGE_BLOB_STORAGE_FULL: the large-blob array would not fit.
    public static let largeBlobStorageFull = CTAPStatus(rawValue: 0x18)
    /// CTAP2_ERR_INTEGRITY_FAILURE: a written large-blob array's hash does not match.
    public static let integrityFailure = CTAPStatus(rawValue: 0x3D)
}

extension VirtualKey.Configuration {
    /// Whether authenticatorLargeBlobs and the largeBlobKey extension are offered (`largeBlobs`).
    var supportsLargeBlobs: Bool { options["largeBlobs"] == true }
    /// maxFragmentLength: maxMsgSize − 64 (CTAP 2.1 §6.10.2).
    var maxLargeBlobFragmentLength: Int { max(maxMsgSize - 64, 1) }
}

extension VirtualKey {
    /// authenticatorLargeBlobs parameters (CTAP 2.1 §6.10.2).
    enum LargeBlobsParameter {
        static let get = 0x01
        static let set = 0x02
        static let offset = 0x03
        static let length = 0x04
        static let pinUvAuthParam = 0x05
        static let pinUvAuthProtocol = 0x06
    }

    /// The authenticatorLargeBlobs response member (CTAP 2.1 §6.10.2).
    enum LargeBlobsResponseMember {
        static let config = 0x01
    }

    /// The largeBlobKey extension identifier (CTAP 2.1 §12.3).
    static let largeBlobKeyExtension = "largeBlobKey"
    /// makeCredential's response member carrying the largeBlobKey (CTAP 2.1 §6.1 "Response").
    static let makeCredentialLargeBlobKeyMember = 0x05
    /// getAssertion's response member carrying the largeBlobKey (CTAP 2.1 §6.2 "Response").
    static let assertionLargeBlobKeyMember = 0x07
    /// getInfo's maxSerializedLargeBlobArray member (CTAP 2.1 §6.4).
    static let maxSerializedLargeBlobArrayMember = 0x0B
    /// The smallest maxSerializedLargeBlobArray the spec allows (CTAP 2.1 §6.4).
    public static let minimumMaxSerializedLargeBlobArray = 1024

    /// The array a key starts with: an empty CBOR array and LEFT(SHA-256(h'80'), 16)
    /// (CTAP 2.1 §6.10.2).
    static let initialLargeBlobArray: [UInt8] = {
        let empty: [UInt8] = [0x80]
        return empty + Array(SHA256.hash(data: empty).prefix(16))
    }()

    /// A write in progress: how long it will be and what has come so far (CTAP 2.1 §6.10.2).
    struct PendingLargeBlobWrite {
        var expectedLength: Int
        var buffer: [UInt8]
        var expectedNextOffset: Int { buffer.count }
    }

    /// The serialized large-blob array stored now.
    public var serializedLargeBlobArray: [UInt8] { state.largeBlobArray ?? Self.initialLargeBlobArray }

    /// authenticatorLargeBlobs (CTAP 2.1 §6.10.2): reads of up to maxFragmentLength bytes and
    /// fragmented writes whose result is checked against its trailing hash before it replaces
    /// the stored array.
    func largeBlobs(_ raw: ArraySlice<UInt8>) throws(VirtualKeyError) -> CBORMap? {
        typealias P = LargeBlobsParameter
        let p = try CTAPParameters(request: raw, context: "largeBlobs")
        let get = try p.unsigned(P.get)
        let set = try p.bytes(P.set)
        let offsetValue = try p.unsigned(P.offset)
        let length = try p.unsigned(P.length)
        let pinUvAuthParam = try p.bytes(P.pinUvAuthParam)
        let pinUvAuthProtocol = try p.unsigned(P.pinUvAuthProtocol)
        let fragmentLimit = configuration.maxLargeBlobFragmentLength

        guard let offsetValue else { throw .rejected(.invalidParameter, "largeBlobs lacks its offset.") }
        guard (get == nil) != (set == nil) else {
            throw .rejected(.invalidParameter, "largeBlobs takes exactly one of get and set.")
        }
        let stored = serializedLargeBlobArray
        if let get {
            guard length == nil else { throw .rejected(.invalidParameter, "A largeBlobs read takes no length.") }
            guard get <= UInt64(fragmentLimit) else {
                throw .rejected(.invalidLength, "A largeBlobs read asks for more than maxFragmentLength.")
            }
            guard offsetValue <= UInt64(stored.count) else {
                throw .rejected(.invalidParameter, "The largeBlobs read starts past the end of the array.")
            }
            let start = Int(offsetValue)
            let end = min(start + Int(get), stored.count)
            return [.int(LargeBlobsResponseMember.config): .byteString(Array(stored[start..<end]))]
        }
        guard let set else { throw .rejected(.invalidParameter, "largeBlobs takes exactly one of get and set.") }
        guard set.count <= fragmentLimit else {
            throw .rejected(.invalidLength, "The largeBlobs fragment is longer than maxFragmentLength.")
        }
        var pending: PendingLargeBlobWrite
        if offsetValue == 0 {
            guard let length else {
                throw .rejected(.invalidParameter, "The first largeBlobs fragment lacks the total length.")
            }
            guard length <= UInt64(configuration.maxSerializedLargeBlobArray) else {
                throw .rejected(
                    .largeBlobStorageFull,
                    "The large-blob array would be \(length) bytes; maxSerializedLargeBlobArray is \(configuration.maxSerializedLargeBlobArray)."
                )
            }
            guard length >= 17 else {
                throw .rejected(.invalidParameter, "A serialized large-blob array has at least 17 bytes.")
            }
            pending = PendingLargeBlobWrite(expectedLength: Int(length), buffer: [])
        } else {
            guard length == nil else {
                throw .rejected(.invalidParameter, "Only the first largeBlobs fragment gives the length.")
            }
            guard let current = pendingLargeBlobWrite, offsetValue == UInt64(current.expectedNextOffset) else {
                throw .rejected(.invalidSequence, "The largeBlobs fragment is not the one expected next.")
            }
            pending = current
        }
        if isProtectedByUserVerification || alwaysUVEnabled {
            guard let pinUvAuthParam else {
                throw .rejected(.puatRequired, "Writing large blobs needs a pinUvAuthParam on this key.")
            }
            guard pinUvAuthProtocol != nil else {
                throw .rejected(.missingParameter, "pinUvAuthParam came without pinUvAuthProtocol.")
            }
            let offset = UInt32(truncatingIfNeeded: offsetValue)
            let message =
                [UInt8](repeating: 0xFF, count: 32) + [CTAPCommand.largeBlobs.rawValue, 0x00]
                + (0..<4).map { UInt8(truncatingIfNeeded: offset >> (8 * $0)) } + Array(SHA256.hash(data: set))
            try verifyPinUvAuthParam(
                pinUvAuthParam, protocol: pinUvAuthProtocol, message: message, permission: .largeBlobWrite,
                rpID: nil, bindsRP: false,
                // CTAP 2.1 §6.10.2 checks the lbw permission only: a getAssertion clears every
                // permission but lbw, and the UV flag, exactly so that the platform can write
                // the credential's blob next with the same token.
                requiresUserVerifiedFlag: false)
        }
        guard offsetValue + UInt64(set.count) <= UInt64(pending.expectedLength) else {
            throw .rejected(.invalidParameter, "The largeBlobs fragment runs past the announced length.")
        }
        pending.buffer += set
        guard pending.buffer.count == pending.expectedLength else {
            pendingLargeBlobWrite = pending
            return nil
        }
        pendingLargeBlobWrite = nil
        let content = pending.buffer.dropLast(16)
        guard Array(SHA256.hash(data: Array(content)).prefix(16)) == Array(pending.buffer.suffix(16)) else {
            throw .rejected(.integrityFailure, "The written large-blob array's hash does not match.")
        }
        state.largeBlobArray = pending.buffer
        try persist()
        logger.debug("Large-blob array written", metadata: ["bytes": "\(pending.buffer.count)"])
        return nil
    }

    // MARK: The largeBlobKey extension (CTAP 2.1 §12.3)

    /// Whether makeCredential or getAssertion asks for the largeBlobKey: only `true` is a valid
    /// input, and only for discoverable credentials at creation (§12.3 "authenticator
    /// processing"). Nil when the key does not offer large blobs (the input is ignored then, as
    /// unknown extensions are).
    func largeBlobKeyRequested(_ extensions: CTAPParameters?, makeCredentialRK rk: Bool?) throws(VirtualKeyError)
        -> Bool
    {
        guard configuration.supportsLargeBlobs,
            let value = try extensions?.bool(Self.largeBlobKeyExtension)
        else { return false }
        guard value else { throw .rejected(.invalidOption, "The largeBlobKey extension input must be true.") }
        if let rk, !rk {
            throw .rejected(.invalidOption, "A largeBlobKey is only made for discoverable credentials.")
        }
        return true
    }

    /// Gives a new discoverable credential its random largeBlobKey and returns it.
    func makeLargeBlobKey(credentialID: [UInt8]) -> [UInt8] {
        let key = SystemRandom.bytes(32)
        state.largeBlobKeys[credentialID] = key
        return key
    }

    /// Adds the credential's largeBlobKey to an assertion response when it was asked for and the
    /// credential has one.
    func addLargeBlobKey(to response: inout CBORMap, credentialID: [UInt8], requested: Bool) {
        guard requested, let key = state.largeBlobKeys[credentialID] else { return }
        response[.int(Self.assertionLargeBlobKeyMember)] = .byteString(key)
    }
}
