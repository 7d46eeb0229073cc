import CTAP2
import Transport

/// The WebAuthn `largeBlob` extension at registration (WebAuthn L3 §10.1.5), shaped like
/// AuthenticationServices' `ASAuthorizationPublicKeyCredentialLargeBlobRegistrationInput`.
public struct SecurityKeyLargeBlobRegistrationInput: Sendable, Hashable {
    /// How much the relying party needs large-blob storage.
    public enum SupportRequirement: String, Sendable, Hashable {
        /// Registration fails on a key that cannot store large blobs.
        case required
        /// Registration goes on either way; the output says whether the key can.
        case preferred
    }

    /// How much the relying party needs it.
    public var supportRequirement: SupportRequirement

    /// Asks for large-blob storage with `supportRequirement`.
    public init(supportRequirement: SupportRequirement) { self.supportRequirement = supportRequirement }
}

/// The `largeBlob` output of a registration: whether the new credential can hold a blob.
public struct SecurityKeyLargeBlobRegistrationOutput: Sendable, Hashable {
    /// Whether the key gave the credential a largeBlobKey (CTAP 2.1 §12.3).
    public var isSupported: Bool

    /// An output saying whether large blobs are supported.
    public init(isSupported: Bool) { self.isSupported = isSupported }
}

/// The WebAuthn `largeBlob` extension at sign-in: read the credential's blob, or write one.
public enum SecurityKeyLargeBlobAssertionInput: Sendable, Hashable {
    /// Read the blob stored for the credential used.
    case read
    /// Store these bytes for the credential used (replacing what it had); needs an allow
    /// list and user verification (the write takes a token with the `lbw` permission).
    case write([UInt8])
}

/// The `largeBlob` output of a sign-in.
public struct SecurityKeyLargeBlobAssertionOutput: Sendable, Hashable {
    /// The blob read; nil when none is stored (or the key's array is damaged), or when writing.
    public var readData: [UInt8]?
    /// Whether the write succeeded; nil when reading.
    public var didWrite: Bool?

    /// An output with what was read or whether the write succeeded.
    public init(readData: [UInt8]? = nil, didWrite: Bool? = nil) {
        self.readData = readData
        self.didWrite = didWrite
    }
}

extension SecurityKeyAuthorizationController {
    /// Whether `key` stores large blobs for credentials (the `largeBlobs` option and the
    /// largeBlobKey extension, CTAP 2.1 §6.10, §12.3).
    static func supportsLargeBlobs(_ info: AuthenticatorInfo) -> Bool {
        info.options.isEnabled(.largeBlobs) && info.extensions.contains(.largeBlobKey)
    }

    /// Checks the registration's largeBlob input before anything is created (WebAuthn L3
    /// §10.1.5): `required` on a key without large blobs, or without a discoverable credential
    /// (the only kind a largeBlobKey is given for), fails. Returns whether to ask for the key.
    static func largeBlobKeyWanted(
        _ request: SecurityKeyCredentialRegistrationRequest, info: AuthenticatorInfo, residentKey: Bool
    ) throws(SecurityKeyError) -> Bool {
        guard let input = request.largeBlob else { return false }
        let possible = supportsLargeBlobs(info) && residentKey
        if input.supportRequirement == .required && !possible {
            throw SecurityKeyError(
                .notHandled,
                supportsLargeBlobs(info)
                    ? "Large-blob storage needs a discoverable credential: set the resident key preference to required."
                    : "This security key cannot store large blobs.")
        }
        return possible
    }

    /// Checks the sign-in's largeBlob input (WebAuthn L3 §10.1.5): a write needs an allow list.
    static func validateLargeBlob(_ request: SecurityKeyCredentialAssertionRequest) throws(SecurityKeyError) {
        if case .write = request.largeBlob, request.allowedCredentials.isEmpty {
            throw SecurityKeyError(
                .invalidRequest, "Writing a large blob needs the credential to write it for (an allow list).")
        }
    }

    /// Reads or writes the chosen credential's blob with the largeBlobKey the assertion gave
    /// (CTAP 2.1 §6.10.3, §6.10.4). A key that gave no largeBlobKey has no blob for it: the read
    /// finds nothing, the write is reported as not done. The key itself is never logged.
    func performLargeBlob(
        _ input: SecurityKeyLargeBlobAssertionInput, response: GetAssertionResponse, key: ProviderKey,
        token: PINUVAuthToken?, deadline: Deadline
    ) async -> SecurityKeyLargeBlobAssertionOutput {
        guard let blobKey = response.largeBlobKey, blobKey.count == 32 else {
            if case .write = input { return SecurityKeyLargeBlobAssertionOutput(didWrite: false) }
            return SecurityKeyLargeBlobAssertionOutput()
        }
        switch input {
        case .read:
            do throws(CTAP2Error) {
                let store = try LargeBlobs(session: key.session, info: key.info, logger: logger)
                return SecurityKeyLargeBlobAssertionOutput(readData: try await store.blob(key: blobKey, deadline: deadline).data)
            } catch {
                logger.info("the large blob could not be read", metadata: ["code": "\(error.code)"])
                return SecurityKeyLargeBlobAssertionOutput()
            }
        case .write(let data):
            guard let token else { return SecurityKeyLargeBlobAssertionOutput(didWrite: false) }
            do throws(CTAP2Error) {
                let store = try LargeBlobs(session: key.session, info: key.info, token: token, logger: logger)
                try await store.setBlob(data, key: blobKey, deadline: deadline)
                return SecurityKeyLargeBlobAssertionOutput(didWrite: true)
            } catch {
                logger.info("the large blob could not be written", metadata: ["code": "\(error.code)"])
                return SecurityKeyLargeBlobAssertionOutput(didWrite: false)
            }
        }
    }
}
