import CTAP2
import Transport

extension Authenticator {
    /// Whether this key is used through CTAP1/U2F: it did not answer authenticatorGetInfo, or
    /// listed no CTAP2 version, and answered U2F_VERSION with `U2F_V2`.
    public var isU2FOnly: Bool { info.isU2FOnly }

    /// How long the U2F_VERSION probe of a key that failed getInfo may take.
    static let u2fProbeTimeout: Duration = .seconds(3)

    /// The info to use for a key that failed getInfo with `error` (nil: its getInfo listed no
    /// CTAP2 version) when it answers U2F_VERSION with `U2F_V2`; nil when it is not a U2F key
    /// or the failure is one a U2F probe cannot get past (cancelled, gone, timed out).
    static func u2fOnlyInfo(_ session: CTAP2Session, after error: CTAP2Error?, deadline: Deadline) async
        -> AuthenticatorInfo?
    {
        if let error {
            switch error.code {
            case .invalidCommand, .malformedResponse, .authenticatorStatus: break
            case .transport:
                // CTAPHID without the CBOR capability, or a card answering 6D00 to NFCCTAP_MSG.
                let code = (error.underlying as? TransportError)?.code
                guard code == .notSupported || code == .deviceError || code == .malformedResponse else { return nil }
            default: return nil
            }
        }
        guard !deadline.hasPassed, session.connection.capabilities.contains(.noU2F) == false,
            let version = try? await session.u2fVersion(deadline: deadline.capped(at: u2fProbeTimeout)),
            version == AuthenticatorVersion.u2fV2.rawValue
        else { return nil }
        return try? AuthenticatorInfo.u2fOnly()
    }

    /// Touch selection for a U2F key (as libfido2 does): a U2F_REGISTER for a throwaway
    /// application, polled until the user touches the key; the registration is discarded.
    func waitForU2FTouch(
        deadline: Deadline, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(AuthenticatorError) {
        do throws(CTAP2Error) {
            _ = try await session.u2fRegister(
                challenge: [UInt8](repeating: 0, count: 32), application: [UInt8](repeating: 0, count: 32),
                deadline: deadline, keepalive: keepalive)
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }
}
