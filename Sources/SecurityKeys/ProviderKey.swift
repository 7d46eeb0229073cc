import CBOR
import CTAP2
import Logging
import Transport

/// One key a request may use: its CTAP2 session and what getInfo said.
struct ProviderKey: Sendable {
    let session: CTAP2Session
    let info: AuthenticatorInfo
    /// Whether the controller opened the connection (and so closes it).
    let owned: Bool

    var uri: String { session.connection.descriptor.uri }

    /// How long getInfo may take while keys are being found.
    static let getInfoTimeout: Duration = .seconds(5)

    /// Starts a session and asks getInfo; nil when the device does not answer as a CTAP2 key.
    static func open(
        _ connection: any AuthenticatorConnection, owned: Bool, deadline: Deadline,
        logger: Logger
    ) async -> ProviderKey? {
        let session = CTAP2Session(connection: connection, logger: logger)
        guard !deadline.hasPassed else { return nil }
        do throws(CTAP2Error) {
            let info = try await session.getInfo(deadline: deadline.capped(at: getInfoTimeout))
            return ProviderKey(session: session, info: info, owned: owned)
        } catch {
            logger.debug(
                "device is not a usable CTAP2 key",
                metadata: ["device": "\(connection.descriptor.uri)", "code": "\(error.code)"])
            return nil
        }
    }

    /// Whether the key speaks CTAP 2.1 (authenticatorSelection and permissions).
    var isCTAP21: Bool { info.supportsCTAP21 }

    /// Waits for the user to touch this key: authenticatorSelection (CTAP 2.1 §6.9) where the
    /// key has it, else a makeCredential with an empty pinUvAuthParam, which a CTAP 2.0 key answers
    /// after a touch with PIN_NOT_SET or PIN_INVALID (CTAP 2.1 §6.1.2 step 1), creating nothing.
    func waitForTouch(deadline: Deadline) async throws(SecurityKeyError) {
        try checkDeadline(deadline)
        do throws(CTAP2Error) {
            if isCTAP21 {
                try await session.selection(deadline: deadline)
                return
            }
            var probe = MakeCredentialRequest(
                clientDataHash: [UInt8](repeating: 0, count: 32), rp: RelyingPartyEntity(id: ".dummy"),
                user: UserEntity(id: [0x01], name: "dummy"),
                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
            if info.options[.clientPIN] != nil {
                probe.pinUVAuthParam = []
                probe.pinUVAuthProtocol = 1
            }
            _ = try await session.makeCredential(probe, deadline: deadline)
        } catch {
            if error.code == .pinNotSet || error.code == .pinInvalid {
                return
            }
            throw SecurityKeyError(error)
        }
    }

    /// The transports to record with a new credential: what the key says, else how it was reached.
    var transports: [SecurityKeyTransport] {
        if !info.transports.isEmpty { return info.transports.map(SecurityKeyTransport.init(rawValue:)) }
        switch session.connection.descriptor.transport {
        case .nfc: return [.nfc]
        case .usb: return [.usb]
        default: return []
        }
    }

    /// Finds which of `credentials` this key holds for `rpID` without a touch (getAssertion with
    /// up=false), in chunks of maxCredentialCountInList, skipping IDs longer than
    /// maxCredentialIdLength (the key cannot hold them). Returns the matching descriptor.
    func preflight(
        rpID: String, credentials: [SecurityKeyCredentialDescriptor], clientDataHash: [UInt8],
        token: PINUVAuthToken?, deadline: Deadline
    ) async throws(SecurityKeyError) -> SecurityKeyCredentialDescriptor? {
        let maxLength = info.maxCredentialIDLength.map { Int(clamping: $0) } ?? Int.max
        let candidates = credentials.filter { !$0.credentialID.isEmpty && $0.credentialID.count <= maxLength }
        let chunkSize = max(1, info.maxCredentialCountInList.map { Int(clamping: $0) } ?? 1)
        var start = 0
        while start < candidates.count {
            let chunk = Array(candidates[start..<min(start + chunkSize, candidates.count)])
            start += chunkSize
            var request = GetAssertionRequest(
                rpID: rpID, clientDataHash: clientDataHash,
                allowList: chunk.map { PublicKeyCredentialDescriptor(id: $0.credentialID) },
                options: CommandOptions(userPresence: false))
            let response: GetAssertionResponse
            do throws(CTAP2Error) {
                if let token, token.rpID == nil || token.rpID == rpID,
                    token.permissions.contains(.getAssertion)
                {
                    try request.authorize(with: token)
                }
                response = try await session.getAssertion(request, deadline: deadline)
            } catch {
                if error.code == .noCredentials { continue }
                throw SecurityKeyError(error)
            }
            let id = response.credential?.id ?? (chunk.count == 1 ? chunk[0].credentialID : nil)
            guard let id, let match = chunk.first(where: { $0.credentialID == id }) else {
                throw SecurityKeyError(
                    .invalidResponse,
                    "The security key answered a silent check with a credential that was not asked for.")
            }
            return match
        }
        return nil
    }
}

