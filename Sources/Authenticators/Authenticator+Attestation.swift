import _SecurityKeyInternals
import CTAP2
import Transport

/// What a key answered to a registration made only to see its attestation: the response and
/// the client data hash it signed, for a verifier to check.
public struct AttestationSample: Sendable {
    /// The RP ID the throwaway credential was made for.
    public var rpID: String
    /// The random client data hash the attestation signs.
    public var clientDataHash: [UInt8]
    /// The key's authenticatorMakeCredential response.
    public var response: MakeCredentialResponse

    /// Creates a sample.
    public init(rpID: String, clientDataHash: [UInt8], response: MakeCredentialResponse) {
        self.rpID = rpID
        self.clientDataHash = clientDataHash
        self.response = response
    }
}

extension Authenticator {
    /// Registers a throwaway non-discoverable credential for a random RP ID (under `.invalid`,
    /// which no relying party can own) and a random client data hash, to see the key's
    /// attestation: the only proof that a key is what it says it is. Needs a touch. Nothing is
    /// stored on the key: a non-discoverable credential lives in its credential ID, which is
    /// dropped here.
    ///
    /// A key that demands user verification for makeCredential (alwaysUv, or a PIN without
    /// makeCredUvNotRqd) verifies the user through `interaction`; without one that can prompt,
    /// ``AuthenticatorError/Code/notInteractive`` is thrown before anything is sent.
    public func throwawayRegistration(
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> AttestationSample {
        // One ceremony: the key is held from the token to the makeCredential (Authenticator+Ceremony.swift).
        try await withCeremony { () throws(AuthenticatorError) -> AttestationSample in
            try await attestationSample(interaction: interaction, deadline: deadline)
        }
    }

    private func attestationSample(
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> AttestationSample {
        let rpID = "attest-\(Hex.encode(SystemRandom.bytes(8))).invalid"
        let clientDataHash = SystemRandom.bytes(32)
        var request = MakeCredentialRequest(
            clientDataHash: clientDataHash, rp: RelyingPartyEntity(id: rpID, name: "securitykey attestation check"),
            user: UserEntity(id: SystemRandom.bytes(16), name: "attestation-check"),
            pubKeyCredParams: [.es256, .edDSA, .rs256].map { PublicKeyCredentialParameters(algorithm: $0) },
            options: CommandOptions(residentKey: false))
        let pinSet = info.options.isEnabled(.clientPIN)
        let demandsUV =
            info.isEnabled(.alwaysUV) || (pinSet && !info.isEnabled(.makeCredentialUVNotRequired))
        var verification = UserVerification.none
        if demandsUV {
            guard let interaction, interaction.canPrompt || info.options.isEnabled(.userVerification) else {
                throw AuthenticatorError(
                    .notInteractive,
                    "The key registers only after user verification (its PIN), and nobody can be asked for it.",
                    deviceURI: uri)
            }
            verification = try await verifyUser(
                permissions: .makeCredential, rpID: rpID, interaction: interaction, deadline: deadline)
        }
        defer { verification.wipe() }
        do throws(CTAP2Error) {
            switch verification {
            case .token(let token): try request.authorize(with: token)
            case .uvOption: request.options = CommandOptions(residentKey: false, userVerification: true)
            case .none: break
            }
            let response = try await session.makeCredential(
                request, deadline: deadline, keepalive: touchObserver(interaction))
            return AttestationSample(rpID: rpID, clientDataHash: clientDataHash, response: response)
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }
}
