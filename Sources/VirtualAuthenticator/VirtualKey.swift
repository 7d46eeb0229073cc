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
    /// With an imported identity (``Configuration/attestationIdentity``), the last certificate
    /// of its chain.
    public nonisolated let attestationRootCertificateDER: [UInt8]
    /// The attestation certificate (DER), as sent in `x5c` by packed attestation.
    public nonisolated let attestationCertificateDER: [UInt8]
    /// What packed attestation sends in `x5c`: the attestation certificate, then, with an
    /// imported identity, the CAs its chain names.
    public nonisolated let attestationCertificateChainDER: [[UInt8]]

    /// The enterprise attestation certificate (DER) of an enterprise-attestation-capable key
    /// (configuration option `ep` present), sent in `x5c` when enterprise attestation is given.
    public nonisolated let enterpriseAttestationCertificateDER: [UInt8]?
    /// The root CA certificate (DER) that issued ``enterpriseAttestationCertificateDER``.
    public nonisolated let enterpriseAttestationRootCertificateDER: [UInt8]?

    /// How user presence requests are answered now.
    public internal(set) var userPresence: UserPresencePolicy
    /// How the simulated built-in user verification answers now (when `uv` is configured).
    public internal(set) var userVerification: UserVerificationPolicy
    /// How many times ``wink()`` was called.
    public internal(set) var winkCount = 0

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
    /// Built-in verifications since the PIN was last entered (getInfo uvCountSinceLastPinEntry).
    var uvCountSinceLastPINEntry = 0

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
        let loaded = try Self.loadState(configuration: configuration, stateFile: stateFile, access: stateFileAccess)
        let enterpriseIdentity = loaded.enterpriseAttestationKey != nil ? loaded.state.enterpriseAttestation : nil
        self.configuration = configuration
        self.aaguid = loaded.state.aaguid
        self.enterpriseAttestationCertificateDER = enterpriseIdentity?.certificate
        self.enterpriseAttestationRootCertificateDER = enterpriseIdentity?.rootCertificate
        self.enterpriseAttestationKey = loaded.enterpriseAttestationKey
        if let imported = configuration.attestationIdentity, let leaf = imported.certificates.first,
            let top = imported.certificates.last
        {
            do {
                self.attestationKey = try P256.Signing.PrivateKey(rawRepresentation: imported.key)
            } catch {
                throw VirtualKeyError(.invalidConfiguration, "The imported attestation key is not a P-256 key.")
            }
            self.attestationRootCertificateDER = top
            self.attestationCertificateDER = leaf
            self.attestationCertificateChainDER = imported.certificates
        } else {
            self.attestationKey = loaded.attestationKey
            self.attestationRootCertificateDER = loaded.state.rootCertificate
            self.attestationCertificateDER = loaded.state.attestationCertificate
            self.attestationCertificateChainDER = [loaded.state.attestationCertificate]
        }
        self.state = loaded.state
        self.stateFile = stateFileAccess == .readWrite ? loaded.file : nil
        self.stateLock = loaded.lock
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
        let handler = CommandHandler.registered(for: command)
        let continues = handler?.continues ?? []
        if !continues.contains(.assertions) { pendingAssertions = nil }
        if !continues.contains(.enumeration) { pendingEnumeration = nil }
        do throws(VirtualKeyError) {
            // maxMsgSize bounds the whole message, command byte included (CTAP 2.1 §6.4).
            guard message.count <= configuration.maxMsgSize else {
                throw VirtualKeyError.rejected(
                    .requestTooLarge,
                    "The request is \(message.count) bytes; maxMsgSize is \(configuration.maxMsgSize).")
            }
            guard let handler, handler.isOffered(configuration) else {
                throw VirtualKeyError.rejected(.invalidCommand, "Command \(command) is not supported.")
            }
            let response = try await handler.handle(self, message[1...], command, keepalive)
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

    // MARK: Shared machinery

    var now: ContinuousClock.Instant { ContinuousClock.now + clockOffset }

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

    var wrappingKey: SymmetricKey { SymmetricKey(data: state.wrappingKey) }
}
