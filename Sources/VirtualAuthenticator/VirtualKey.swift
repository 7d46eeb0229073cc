import CBOR
import Crypto
import Logging
import Transport

/// A CTAP2 authenticator in software (CTAP 2.1 §6): a product feature that downstream
/// projects put behind a transport server (CTAPHID over UDP or uhid, a vpcd card) or an
/// ``InProcessConnection`` to test FIDO2 code without hardware.
///
/// It implements authenticatorGetInfo, MakeCredential, GetAssertion, GetNextAssertion, ClientPIN
/// (PIN/UV auth protocols one and two, pinUvAuthTokens with permissions), Reset and Selection,
/// a simulated built-in user verification, plus CTAP1/U2F register and authenticate. State lives in memory, or in a
/// file given at creation so that a CI keeps a stable AAGUID, attestation and credentials.
/// One request is served at a time; a request arriving meanwhile answers CTAP1_ERR_CHANNEL_BUSY.
public actor VirtualKey: CTAPMessageHandler {
    /// Identity, limits and behaviour.
    public nonisolated let configuration: Configuration
    /// The AAGUID (from the state, so stable across runs with one state file).
    public nonisolated let aaguid: [UInt8]
    /// The root CA certificate (DER) that issued the attestation certificate; verifiers trust it.
    public nonisolated let attestationRootCertificateDER: [UInt8]
    /// The attestation certificate (DER), as sent in `x5c` by packed attestation.
    public nonisolated let attestationCertificateDER: [UInt8]

    /// The enterprise attestation certificate (DER) of an enterprise-attestation-capable key
    /// (configuration option `ep` present), sent in `x5c` when enterprise attestation is given.
    public nonisolated let enterpriseAttestationCertificateDER: [UInt8]?
    /// The root CA certificate (DER) that issued ``enterpriseAttestationCertificateDER``.
    public nonisolated let enterpriseAttestationRootCertificateDER: [UInt8]?

    /// The root CA certificate as PEM text.
    public nonisolated var attestationRootCertificatePEM: String {
        AttestationIdentity.pem(attestationRootCertificateDER)
    }

    /// How user presence requests are answered now.
    public private(set) var userPresence: UserPresencePolicy
    /// How the simulated built-in user verification answers now (when `uv` is configured).
    public private(set) var userVerification: UserVerificationPolicy
    /// How many times ``wink()`` was called.
    public private(set) var winkCount = 0

    var state: VirtualKeyState
    let stateFile: VirtualKeyStateFile?
    /// Held while this key may write `stateFile`, so a second key on the same file is refused.
    let stateLock: VirtualKeyStateLock?
    let attestationKey: P256.Signing.PrivateKey
    let enterpriseAttestationKey: P256.Signing.PrivateKey?
    let logger: Logger
    /// The assertions left for getNextAssertion, if any.
    var pendingAssertions: PendingAssertions?
    /// When the key was last powered up.
    var poweredUp: ContinuousClock.Instant
    /// Added to the clock; lets tests step over the reset and getNextAssertion windows.
    var clockOffset: Duration = .zero
    var busy = false
    /// When a U2F request first asked for presence under an `approveAfter` policy.
    var u2fPresenceRequested: ContinuousClock.Instant?
    /// Key-agreement keys, pinUvAuthTokens and the PIN-mismatch count of this power-up.
    var clientPINSession = ClientPINSession()
    /// What credential management's enumerateRPsGetNextRP or
    /// enumerateCredentialsGetNextCredential continues with, if anything.
    var pendingEnumeration: PendingEnumeration?
    /// The simulated fingerprint sensor's enrollment in progress and sample script position.
    var bioSession = BioSensorSession()
    /// A fragmented authenticatorLargeBlobs write in progress, if any.
    var pendingLargeBlobWrite: PendingLargeBlobWrite?
    /// Where issued tokens and agreed shared secrets are written, for leak tests only.
    var secretsLog: VirtualKeySecretsLog?

    /// Writes every pinUvAuthToken this key issues and every shared secret it agrees from now
    /// on to `log` (test-only: see ``VirtualKeySecretsLog``).
    public func recordSecrets(to log: VirtualKeySecretsLog) {
        secretsLog = log
    }

    /// The platform's shared secret (§6.5.6 `decapsulate`), recorded when a secrets log is set.
    func agreeSharedSecret(_ pinProtocol: PINProtocol, peer: CBORMap) throws(VirtualKeyError) -> [UInt8] {
        let secret = try pinProtocol.decapsulate(peer, with: clientPINSession.keyAgreementKey(pinProtocol))
        secretsLog?.record(.sharedSecret, protocolVersion: Int(pinProtocol.rawValue), secret)
        return secret
    }

    /// Creates a virtual key.
    ///
    /// - Parameters:
    ///   - configuration: identity, limits and behaviour.
    ///   - stateFile: where to keep state; nil keeps it in memory. A missing file is created
    ///     (mode 0600); an existing file that is not a valid state is refused, never overwritten.
    ///     A read-write key holds `stateFile.lock` (flock) while it lives; a second one on the same
    ///     file, in any process, is refused with ``VirtualKeyError/Code/stateFileInUse``.
    ///   - stateFileAccess: ``StateFileAccess/readOnly`` loads an existing file (a fixture checked
    ///     into a CI repository) and keeps every later change in memory only.
    ///   - userPresence: the initial user presence policy.
    ///   - userVerification: the initial built-in user verification policy.
    ///   - logger: receives commands and statuses at `debug`; secrets are never logged.
    public init(
        configuration: Configuration = Configuration(),
        stateFile: String? = nil,
        stateFileAccess: StateFileAccess = .readWrite,
        userPresence: UserPresencePolicy = .approve,
        userVerification: UserVerificationPolicy = .match,
        logger: Logger = Logger(label: "securitykey.virtual-authenticator")
    ) throws(VirtualKeyError) {
        try configuration.validate()
        let file = stateFile.map { VirtualKeyStateFile(path: $0) }
        // Taken before reading, so no other writer can replace the file between read and use.
        let lock = stateFileAccess == .readWrite ? try file?.lock() : nil
        var loaded: VirtualKeyState
        if let file, let bytes = try file.read() {
            loaded = try VirtualKeyState(decoding: bytes)
            if let wanted = configuration.aaguid, wanted != loaded.aaguid {
                throw VirtualKeyError(
                    .stateMismatch, "The state file \(file.path) belongs to a key with another AAGUID.")
            }
        } else if let file, stateFileAccess == .readOnly {
            throw VirtualKeyError(.stateFileIO, "The read-only state file \(file.path) does not exist.")
        } else {
            loaded = try AttestationIdentity.newState(
                aaguid: configuration.aaguid ?? randomBytes(16),
                enterpriseAttestation: configuration.supportsEnterpriseAttestation)
            try file?.write(loaded.encoded())
        }
        if configuration.supportsEnterpriseAttestation, loaded.enterpriseAttestation == nil {
            // A state made before the key was enterprise attestation capable gets its identity now.
            loaded.enterpriseAttestation = try AttestationIdentity.newEnterpriseIdentity(
                aaguid: loaded.aaguid)
            if stateFileAccess == .readWrite { try file?.write(loaded.encoded()) }
        }
        if try Self.applyConfiguredPIN(configuration, to: &loaded), stateFileAccess == .readWrite {
            try file?.write(loaded.encoded())
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(rawRepresentation: loaded.attestationKey)
        } catch {
            throw VirtualKeyError(.stateFileCorrupt, "The state file's attestation key is not a P-256 key.")
        }
        let enterpriseIdentity =
            configuration.supportsEnterpriseAttestation ? loaded.enterpriseAttestation : nil
        var enterpriseKey: P256.Signing.PrivateKey?
        if let enterpriseIdentity {
            do {
                enterpriseKey = try P256.Signing.PrivateKey(rawRepresentation: enterpriseIdentity.key)
            } catch {
                throw VirtualKeyError(
                    .stateFileCorrupt, "The state file's enterprise attestation key is not a P-256 key.")
            }
        }
        self.configuration = configuration
        self.aaguid = loaded.aaguid
        self.enterpriseAttestationCertificateDER = enterpriseIdentity?.certificate
        self.enterpriseAttestationRootCertificateDER = enterpriseIdentity?.rootCertificate
        self.enterpriseAttestationKey = enterpriseKey
        self.attestationRootCertificateDER = loaded.rootCertificate
        self.attestationCertificateDER = loaded.attestationCertificate
        self.state = loaded
        self.stateFile = stateFileAccess == .readWrite ? file : nil
        self.stateLock = lock
        self.attestationKey = key
        self.userPresence = userPresence
        self.userVerification = userVerification
        self.logger = logger
        self.poweredUp = .now
    }

    /// Whether a state file is written back.
    public enum StateFileAccess: Sendable, Hashable {
        /// Load the file (or create it) and save every change to it.
        case readWrite
        /// Load an existing file and never write to it; changes live in memory only.
        case readOnly
    }

    /// Changes how user presence is answered; a request already waiting sees the change.
    public func setUserPresence(_ policy: UserPresencePolicy) {
        userPresence = policy
    }

    /// Changes how built-in user verification answers; the next verification sees the change.
    public func setUserVerification(_ policy: UserVerificationPolicy) {
        userVerification = policy
    }

    /// The number of discoverable credentials stored.
    public var discoverableCredentialCount: Int { state.credentials.count }

    // MARK: CTAPMessageHandler

    /// Handles one CTAP2 message (command byte + CBOR) and returns status byte + CBOR.
    public func handleCBOR(
        _ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async -> [UInt8] {
        // A U2F-only key knows no CTAP2 command at all (VirtualKey+CTAP1Only.swift).
        guard !configuration.ctap1Only else { return [CTAPStatus.invalidCommand.rawValue] }
        guard let first = message.first else {
            return [CTAPStatus.invalidLength.rawValue]
        }
        guard !busy else { return [CTAPStatus.channelBusy.rawValue] }
        busy = true
        defer { busy = false }
        let command = CTAPCommand(rawValue: first)
        let parameters = message[1...]
        if command != .getNextAssertion { pendingAssertions = nil }
        if command != .credentialManagement && command != .credentialManagementPreview {
            pendingEnumeration = nil
        }
        do throws(VirtualKeyError) {
            // maxMsgSize bounds the whole message, command byte included (CTAP 2.1 §6.4).
            guard message.count <= configuration.maxMsgSize else {
                throw VirtualKeyError.rejected(
                    .requestTooLarge,
                    "The request is \(message.count) bytes; maxMsgSize is \(configuration.maxMsgSize).")
            }
            let response: CBORMap?
            switch command {
            case .getInfo: response = getInfo()
            case .makeCredential: response = try await makeCredential(parameters, keepalive: keepalive)
            case .getAssertion: response = try await getAssertion(parameters, keepalive: keepalive)
            case .getNextAssertion: response = try getNextAssertion()
            case .reset: response = try await reset(keepalive: keepalive)
            case .selection: response = try await selection(keepalive: keepalive)
            case .clientPIN where configuration.supportsClientPIN:
                response = try await clientPIN(parameters, keepalive: keepalive)
            case .credentialManagement where configuration.options["credMgmt"] == true:
                response = try credentialManagement(parameters, preview: false)
            case .credentialManagementPreview where configuration.options["credentialMgmtPreview"] == true:
                response = try credentialManagement(parameters, preview: true)
            case .config where configuration.supportsAuthenticatorConfig:
                response = try authenticatorConfig(parameters)
            case .bioEnrollment where configuration.fingerprintSensor != nil,
                .bioEnrollmentPreview where configuration.fingerprintSensor != nil:
                response = try await bioEnrollment(parameters, command: command, keepalive: keepalive)
            case .largeBlobs where configuration.supportsLargeBlobs:
                response = try largeBlobs(parameters)
            default:
                throw VirtualKeyError.rejected(.invalidCommand, "Command \(command) is not supported.")
            }
            logger.debug("CTAP2 request handled", metadata: ["command": "\(command)", "status": "0x00"])
            guard let response else { return [CTAPStatus.ok.rawValue] }
            return [CTAPStatus.ok.rawValue] + CBOREncoder.encode(.map(response))
        } catch {
            let status = error.status ?? .other
            logger.debug(
                "CTAP2 request rejected",
                metadata: ["command": "\(command)", "status": "\(status)", "reason": "\(error.message)"])
            return [status.rawValue]
        }
    }

    /// Tells the key it was powered off and on: the reset window opens again, getNextAssertion
    /// and credential enumeration state is lost, and the clientPIN state starts afresh (new key-agreement keys, no token,
    /// PIN entry unblocked after three wrong PINs; CTAP 2.1 §6.5.4 `initialize`).
    public func powerCycle() async {
        poweredUp = now
        pendingAssertions = nil
        pendingEnumeration = nil
        pendingLargeBlobWrite = nil
        clientPINSession = ClientPINSession()
        bioSession.pending = nil
    }

    /// Records a wink (CTAPHID_WINK); a software key has no LED.
    public func wink() async {
        winkCount += 1
    }

    // MARK: Shared machinery

    var now: ContinuousClock.Instant { ContinuousClock.now + clockOffset }

    /// Moves this key's clock forward, as if `duration` had passed (for tests of time windows).
    func advanceClock(by duration: Duration) {
        clockOffset += duration
    }

    /// Waits for user presence according to the policy (CTAP 2.1 §5 "user presence").
    func collectUserPresence(
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + configuration.userPresenceTimeout
        while true {
            if Task.isCancelled {
                throw .rejected(
                    .keepaliveCancel, "The request was cancelled while waiting for user presence.")
            }
            switch userPresence {
            case .approve:
                return
            case .deny:
                throw .rejected(.operationDenied, "The user declined.")
            case .approveAfter(let delay):
                if clock.now - start >= delay { return }
            case .never:
                break
            }
            if clock.now >= deadline {
                throw .rejected(.userActionTimeout, "Nobody touched the key in time.")
            }
            keepalive(.userPresenceNeeded)
            do {
                try await Task.sleep(for: configuration.keepaliveInterval)
            } catch {
                throw .rejected(
                    .keepaliveCancel, "The request was cancelled while waiting for user presence.")
            }
        }
    }

    /// Bumps and returns the signature counter for a credential (WebAuthn §6.1.1).
    func nextSignatureCount(credentialID: [UInt8]) -> UInt32 {
        switch configuration.signatureCounter {
        case .global:
            state.signatureCounter = state.signatureCounter == .max ? .max : state.signatureCounter + 1
            return state.signatureCounter
        case .perCredential:
            if let index = state.credentials.firstIndex(where: { $0.id == credentialID }) {
                let c = state.credentials[index].signatureCounter
                state.credentials[index].signatureCounter = c == .max ? .max : c + 1
                return state.credentials[index].signatureCounter
            }
            let c = state.credentialCounters[credentialID] ?? 0
            let next = c == .max ? UInt32.max : c + 1
            state.credentialCounters[credentialID] = next
            return next
        }
    }

    /// Writes the state file, if there is one.
    func persist() throws(VirtualKeyError) {
        guard let stateFile else { return }
        do {
            try stateFile.write(state.encoded())
        } catch {
            logger.error("Cannot save the virtual key state", metadata: ["reason": "\(error.message)"])
            throw .rejected(.other, error.message)
        }
    }

    var wrappingKey: SymmetricKey { SymmetricKey(data: state.wrappingKey) }
}
