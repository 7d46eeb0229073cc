import CBOR
import Logging
import Transport

/// The platform side of authenticatorConfig (CTAP 2.1 §6.11): enterprise attestation, alwaysUv
/// and the minimum PIN length.
///
/// What the key's getInfo rules out is refused before the key is asked: a key without
/// `authnrCfg`, a subcommand missing from authenticatorConfigCommands, enterprise attestation
/// on a key without `ep`, a minimum PIN length below the current one or more RP IDs than
/// maxRPIDsForSetMinPINLength. After a successful change, getInfo describes the old state:
/// read it again.
public struct AuthenticatorConfig: Sendable {
    /// The session commands go through.
    public let session: CTAP2Session
    /// The getInfo response the checks are based on.
    public let info: AuthenticatorInfo
    /// The token with the acfg permission, or nil for a key with neither PIN nor built-in UV.
    public let token: PINUVAuthToken?
    private let logger: Logger

    /// Uses `token` with the key described by `info`; fails when the key offers no
    /// authenticatorConfig.
    public init(
        session: CTAP2Session, info: AuthenticatorInfo, token: PINUVAuthToken?,
        logger: Logger = Logger(label: "securitykey.ctap2.config")
    ) throws(CTAP2Error) {
        guard info.isEnabled(.authenticatorConfig) else {
            throw CTAP2Error(.unsupportedOption, "The key does not offer authenticatorConfig (authnrCfg).")
        }
        self.session = session
        self.info = info
        self.token = token
        self.logger = logger
    }

    /// The longest minimum PIN length CTAP allows: a PIN is at most 63 bytes (§6.5.1).
    public static let longestMinimumPINLength: UInt64 = 63

    /// enableEnterpriseAttestation.
    public func enableEnterpriseAttestation(deadline: Deadline? = nil) async throws(CTAP2Error) {
        guard info.options.isSupported(.enterpriseAttestation) else {
            throw CTAP2Error(
                .unsupportedOption, "The key does not support enterprise attestation (no ep option).")
        }
        try await send(.enableEnterpriseAttestation(token: token), deadline)
    }

    /// toggleAlwaysUv: returns what alwaysUv is now, as getInfo said it was before, flipped.
    @discardableResult
    public func toggleAlwaysUV(deadline: Deadline? = nil) async throws(CTAP2Error) -> Bool {
        guard info.options.isSupported(.alwaysUV) else {
            throw CTAP2Error(.unsupportedOption, "The key does not support alwaysUv.")
        }
        try await send(.toggleAlwaysUV(token: token), deadline)
        return !info.options.isEnabled(.alwaysUV)
    }

    /// setMinPINLength: see ``AuthenticatorConfigRequest/setMinPINLength(_:minPINLengthRPIDs:forceChangePIN:pinComplexityPolicy:token:)``.
    public func setMinPINLength(
        _ newMinPINLength: UInt64? = nil, minPINLengthRPIDs: [String]? = nil, forceChangePIN: Bool = false,
        deadline: Deadline? = nil
    ) async throws(CTAP2Error) {
        guard info.isEnabled(.setMinPINLength) else {
            throw CTAP2Error(.unsupportedOption, "The key does not support setting a minimum PIN length.")
        }
        if let newMinPINLength {
            let current = info.minPINLength ?? 4
            guard newMinPINLength >= current else {
                throw CTAP2Error(
                    .pinPolicyViolation,
                    "The minimum PIN length can only be raised: it is \(current) now, and \(newMinPINLength) is lower."
                )
            }
            guard newMinPINLength <= Self.longestMinimumPINLength else {
                throw CTAP2Error(
                    .invalidRequest,
                    "A minimum PIN length of \(newMinPINLength) is impossible: a PIN is at most 63 bytes.")
            }
        }
        if let rpIDs = minPINLengthRPIDs, !rpIDs.isEmpty {
            let allowed = info.maxRPIDsForSetMinPINLength ?? 0
            guard UInt64(rpIDs.count) <= allowed else {
                throw CTAP2Error(
                    .invalidRequest,
                    "The key accepts at most \(allowed) relying parties for the minPinLength extension, not \(rpIDs.count)."
                )
            }
        }
        do throws(CTAP2Error) {
            try await send(
                .setMinPINLength(
                    newMinPINLength, minPINLengthRPIDs: minPINLengthRPIDs, forceChangePIN: forceChangePIN,
                    token: token),
                deadline)
        } catch  where error.code == .pinPolicyViolation {
            var explained = error
            explained.message =
                "The key refused the new minimum PIN length: it can only be raised, never lowered."
            throw explained
        }
    }

    /// vendorPrototype: a vendor command listed in getInfo's vendorPrototypeConfigCommands.
    public func vendorPrototype(vendorCommandID: UInt64, extra: CBORMap = [:], deadline: Deadline? = nil)
        async throws(CTAP2Error)
    {
        guard info.vendorPrototypeConfigCommands?.contains(vendorCommandID) == true else {
            throw CTAP2Error(
                .unsupportedOption, "The key does not list vendor config command \(vendorCommandID).")
        }
        try await send(
            .vendorPrototype(vendorCommandID: vendorCommandID, extra: extra, token: token), deadline)
    }

    private func send(_ request: AuthenticatorConfigRequest, _ deadline: Deadline?) async throws(CTAP2Error) {
        if let listed = info.authenticatorConfigCommands,
            !listed.contains(UInt64(request.subCommand.rawValue))
        {
            throw CTAP2Error(
                .unsupportedOption, "The key does not offer the config command \(request.subCommand).")
        }
        logger.debug("authenticatorConfig", metadata: ["subCommand": "\(request.subCommand)"])
        do throws(CTAP2Error) {
            _ = try await session.send(request, deadline: deadline)
        } catch {
            logger.debug(
                "authenticatorConfig failed",
                metadata: ["subCommand": "\(request.subCommand)", "code": "\(error.code)"])
            throw error
        }
    }
}
