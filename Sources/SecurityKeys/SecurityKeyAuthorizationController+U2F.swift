import Authenticators
import CBOR
import CTAP2
import Crypto
import Transport

/// Registration and sign-in with a key that speaks only CTAP1/U2F (CTAP 2.1 §10.2 "Interoperating
/// with CTAP1/U2F authenticators"): the U2F responses become the WebAuthn values a CTAP2 key
/// would have returned, so callers never see which protocol the key spoke.
extension SecurityKeyAuthorizationController {
    /// The U2F application parameter of an RP ID or AppID: its SHA-256.
    static func u2fApplication(_ identifier: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(identifier.utf8)))
    }

    /// Registration through U2F_REGISTER: ES256 only, no discoverable credential, no user
    /// verification; the exclude list (and `appidExclude`) pre-flighted with check-only.
    func registerThroughU2F(
        _ request: SecurityKeyCredentialRegistrationRequest, clientData: (json: [UInt8]?, hash: [UInt8]),
        key: ProviderKey, deadline: Deadline
    ) async throws(SecurityKeyError) -> SecurityKeyCredentialRegistration {
        if request.userVerificationPreference == .required {
            throw SecurityKeyError(
                .notHandled,
                "The site requires user verification, and this security key (a U2F-only key) cannot verify users.")
        }
        if request.residentKeyPreference == .required {
            throw SecurityKeyError(
                .notHandled,
                "The site requires a discoverable credential, and this security key (a U2F-only key) cannot store one.")
        }
        guard request.credentialParameters.contains(where: { $0.rawValue == COSEAlgorithm.es256.rawValue }) else {
            throw SecurityKeyError(
                .notHandled, "This security key (a U2F-only key) makes only ES256 credentials, which the site does not accept.")
        }
        let application = Self.u2fApplication(request.relyingPartyIdentifier)
        var applications = [application]
        if let appIDExclude = request.appIDExclude, appIDExclude != request.relyingPartyIdentifier {
            applications.append(Self.u2fApplication(appIDExclude))
        }
        if try await key.u2fHolds(request.excludedCredentials, applications: applications, deadline: deadline) != nil {
            // As with CTAP2's exclude list, the user's touch is collected before saying so
            // (CTAP 2.1 §10.2.1), so a site cannot probe silently.
            do throws(AuthenticatorError) {
                try await key.authenticator.waitForTouch(deadline: deadline, interaction: providerInteraction)
            } catch {
                throw SecurityKeyError(error)
            }
            throw SecurityKeyError(
                .matchedExcludedCredential, "This security key is already registered for this account.")
        }
        let attestation: AttestationObject
        do throws(CTAP2Error) {
            let response = try await key.session.u2fRegister(
                challenge: clientData.hash, application: application, deadline: deadline,
                keepalive: touchObserver(key))
            attestation = try response.attestationObject(rpIDHash: application)
        } catch {
            throw SecurityKeyError(error)
        }
        guard let credential = attestation.authData.attestedCredentialData else {
            throw SecurityKeyError(.invalidResponse, "The U2F registration carries no new credential.")
        }
        let conveyed = request.attestationPreference == .none ? try Self.anonymized(attestation) : attestation
        return SecurityKeyCredentialRegistration(
            attestationObject: conveyed, credentialID: credential.credentialID, clientData: clientData,
            transports: key.transports, deviceURI: key.uri)
    }

    /// Sign-in through U2F_AUTHENTICATE: the allow list (under the RP ID, then the `appid`)
    /// pre-flighted with check-only, then one signature after a touch.
    func signInThroughU2F(
        _ request: SecurityKeyCredentialAssertionRequest, clientData: (json: [UInt8]?, hash: [UInt8]),
        key: ProviderKey, deadline: Deadline
    ) async throws(SecurityKeyError) -> SecurityKeyCredentialAssertion {
        if request.userVerificationPreference == .required {
            throw SecurityKeyError(
                .notHandled,
                "The site requires user verification, and this security key (a U2F-only key) cannot verify users.")
        }
        guard !request.allowedCredentials.isEmpty else {
            throw SecurityKeyError(
                .noCredentials,
                "This security key (a U2F-only key) stores no accounts: the site must name the credential to use.")
        }
        let rpApplication = Self.u2fApplication(request.relyingPartyIdentifier)
        var found = try await key.u2fHolds(
            request.allowedCredentials, applications: [rpApplication], deadline: deadline)
        var usedAppID = false
        if found == nil, let appID = request.appID, appID != request.relyingPartyIdentifier {
            found = try await key.u2fHolds(
                request.allowedCredentials, applications: [Self.u2fApplication(appID)], deadline: deadline)
            usedAppID = found != nil
        }
        guard let (credential, application) = found else {
            throw SecurityKeyError(
                .noCredentials, "This security key holds none of the credentials this site accepts.")
        }
        let authData: AuthenticatorData
        let signature: [UInt8]
        do throws(CTAP2Error) {
            let response = try await key.session.u2fAuthenticate(
                .enforceUserPresence, challenge: clientData.hash, application: application,
                keyHandle: credential.credentialID, deadline: deadline, keepalive: touchObserver(key))
            authData = try response.authenticatorData(rpIDHash: application)
            signature = response.signature
        } catch {
            throw SecurityKeyError(error)
        }
        return SecurityKeyCredentialAssertion(
            credentialID: credential.credentialID, authenticatorData: authData, signature: signature,
            userID: nil, clientData: clientData, appID: usedAppID, deviceURI: key.uri)
    }
}

extension ProviderKey {
    /// The first of `credentials` this U2F key made for one of `applications`, found with
    /// check-only U2F_AUTHENTICATE (no touch), with the application it belongs to. IDs a U2F key
    /// cannot have made (empty, longer than 255 bytes) are skipped.
    func u2fHolds(
        _ credentials: [SecurityKeyCredentialDescriptor], applications: [[UInt8]], deadline: Deadline
    ) async throws(SecurityKeyError) -> (SecurityKeyCredentialDescriptor, [UInt8])? {
        for credential in credentials where (1...255).contains(credential.credentialID.count) {
            for application in applications {
                do throws(CTAP2Error) {
                    if try await session.u2fCheck(
                        keyHandle: credential.credentialID, application: application, deadline: deadline)
                    {
                        return (credential, application)
                    }
                } catch {
                    throw SecurityKeyError(error)
                }
            }
        }
        return nil
    }
}
