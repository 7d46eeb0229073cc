import _SecurityKeyInternals
import CTAP2

/// A registration or sign-in as a command line states it (`securitykey register`,
/// `authenticate`, `hmac-secret`): the relying party, the client data's origin and challenge or
/// a client data hash, user verification and the timeout, and each ceremony's own choices as
/// text, made into the provider's request. Errors are ``SecurityKeyError/Code/invalidRequest``
/// and name the option as those commands spell it (`--challenge`).
public struct SecurityKeyRequestOptions: Sendable, Hashable {
    /// The relying party ID.
    public var relyingPartyIdentifier: String
    /// The client data's origin; `https://` and the RP ID when absent.
    public var origin: String?
    /// The challenge in base64url, at least 16 bytes; 32 random bytes when absent.
    public var challenge: String?
    /// A client data hash (32 bytes, base64 or base64url) to sign instead of building client
    /// data; the request then has no challenge of its own.
    public var clientDataHash: String?
    /// The user verification preference.
    public var userVerification: UserVerificationPreference
    /// How long the request may take.
    public var timeout: Duration

    /// Options for a request to `relyingPartyIdentifier`.
    public init(
        relyingPartyIdentifier: String, origin: String? = nil, challenge: String? = nil, clientDataHash: String? = nil,
        userVerification: UserVerificationPreference = .preferred, timeout: Duration
    ) {
        self.relyingPartyIdentifier = relyingPartyIdentifier
        self.origin = origin
        self.challenge = challenge
        self.clientDataHash = clientDataHash
        self.userVerification = userVerification
        self.timeout = timeout
    }

    /// What a registration states beside the shared options.
    public struct Registration: Sendable, Hashable {
        /// The user's account name.
        public var user: String
        /// The user's display name; the account name when absent.
        public var displayName: String?
        /// The user handle in base64url, 1 to 64 bytes; 16 random bytes when absent.
        public var userID: String?
        /// Make a discoverable credential.
        public var resident: Bool
        /// Acceptable algorithms, preferred first: names or COSE numbers
        /// (`COSEAlgorithm(name:)` in CTAP2), each possibly a comma-separated list; es256 then
        /// eddsa when empty.
        public var algorithms: [String]
        /// Attestation conveyance: none, direct or enterprise.
        public var attestation: String
        /// Attestation statement formats wanted, best first.
        public var attestationFormats: [String]
        /// Credential IDs (base64url) the key must not hold already.
        public var excludedCredentials: [String]

        /// A registration of `user`.
        public init(
            user: String, displayName: String? = nil, userID: String? = nil, resident: Bool = false,
            algorithms: [String] = [], attestation: String = "direct", attestationFormats: [String] = [],
            excludedCredentials: [String] = []
        ) {
            self.user = user
            self.displayName = displayName
            self.userID = userID
            self.resident = resident
            self.algorithms = algorithms
            self.attestation = attestation
            self.attestationFormats = attestationFormats
            self.excludedCredentials = excludedCredentials
        }
    }

    /// The client data and the request's challenge: the hash given (and no challenge), or the
    /// origin with the challenge given or a random one.
    public func clientData() throws(SecurityKeyError) -> (SecurityKeyClientData, challenge: [UInt8]) {
        if let clientDataHash {
            guard let hash = Base64.decodeEitherAlphabet(clientDataHash), hash.count == 32 else {
                throw SecurityKeyError.invalidOption("--client-data-hash must be 32 bytes in base64 or base64url.")
            }
            return (.hash(hash), [])
        }
        guard let challenge else { return (.origin(origin ?? "https://\(relyingPartyIdentifier)"), SystemRandom.bytes(32)) }
        guard let bytes = Base64URL.decode(challenge), bytes.count >= 16 else {
            throw SecurityKeyError.invalidOption("--challenge must be base64url of at least 16 bytes.")
        }
        return (.origin(origin ?? "https://\(relyingPartyIdentifier)"), bytes)
    }

    /// The registration request, and the user handle it registers.
    public func registrationRequest(_ registration: Registration) throws(SecurityKeyError)
        -> (request: SecurityKeyCredentialRegistrationRequest, userHandle: [UInt8])
    {
        let names = registration.algorithms.isEmpty
            ? ["es256", "eddsa"] : registration.algorithms.flatMap { $0.split(separator: ",").map(String.init) }
        let algorithms = try names.map { (name) throws(SecurityKeyError) in try Self.algorithm(name) }
        let excluded = try Self.credentialIDs(registration.excludedCredentials, option: "--exclude")
        let userHandle: [UInt8]
        if let userID = registration.userID {
            guard let bytes = Base64URL.decode(userID), (1...64).contains(bytes.count) else {
                throw SecurityKeyError.invalidOption("--user-id must be base64url of 1 to 64 bytes.")
            }
            userHandle = bytes
        } else {
            userHandle = SystemRandom.bytes(16)
        }
        let (clientData, challenge) = try clientData()
        var request = SecurityKeyCredentialProvider(relyingPartyIdentifier: relyingPartyIdentifier)
            .createCredentialRegistrationRequest(
                challenge: challenge, displayName: registration.displayName ?? registration.user,
                name: registration.user, userID: userHandle)
        request.credentialParameters = algorithms.map { SecurityKeyAlgorithm(rawValue: $0.rawValue) }
        request.excludedCredentials = excluded.map { SecurityKeyCredentialDescriptor(credentialID: $0) }
        request.residentKeyPreference = registration.resident ? .required : .discouraged
        request.userVerificationPreference = userVerification
        request.attestationPreference = AttestationConveyancePreference(rawValue: registration.attestation)
        request.attestationFormats = registration.attestationFormats
        request.clientData = clientData
        request.timeout = timeout
        return (request, userHandle)
    }

    /// The sign-in request, with the credential IDs (base64url) it allows; none lets the key
    /// use its discoverable credentials for the relying party.
    public func assertionRequest(allowing credentials: [String]) throws(SecurityKeyError)
        -> SecurityKeyCredentialAssertionRequest
    {
        let allowed = try Self.credentialIDs(credentials, option: "--credential")
        let (clientData, challenge) = try clientData()
        var request = SecurityKeyCredentialProvider(relyingPartyIdentifier: relyingPartyIdentifier)
            .createCredentialAssertionRequest(challenge: challenge)
        request.allowedCredentials = allowed.map { SecurityKeyCredentialDescriptor(credentialID: $0) }
        request.userVerificationPreference = userVerification
        request.clientData = clientData
        request.timeout = timeout
        return request
    }

    /// The base64url credential IDs given to `option`.
    public static func credentialIDs(_ texts: [String], option: String) throws(SecurityKeyError) -> [[UInt8]] {
        try texts.map { (text) throws(SecurityKeyError) in
            guard let id = Base64URL.decode(text), !id.isEmpty else {
                throw SecurityKeyError.invalidOption("\(option) takes a base64url credential ID, not \"\(text)\".")
            }
            return id
        }
    }

    /// An algorithm by name or COSE number (`COSEAlgorithm(name:)` in CTAP2).
    public static func algorithm(_ text: String) throws(SecurityKeyError) -> COSEAlgorithm {
        guard let algorithm = COSEAlgorithm(name: text) else {
            throw SecurityKeyError.invalidOption(
                "Unknown algorithm \"\(text)\"; use es256, es384, es512, eddsa, rs256, ps256, es256k, mldsa65, mldsa87 or a COSE number.")
        }
        return algorithm
    }
}

extension SecurityKeyError {
    /// An option the user gave that cannot be used as given (its sentence names the option).
    static func invalidOption(_ message: String) -> SecurityKeyError { SecurityKeyError(.invalidRequest, message) }
}
