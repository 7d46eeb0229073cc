import _SecurityKeyInternals
import SecurityKeys

/// The daemon's answers, hostile until checked: the response JSON of CreateCredential and
/// GetCredential, and the account list of a SELECT_CREDENTIAL state.
extension SecurityKeyDaemonClient {
    /// The registration a daemon's CreateCredential response JSON (a RegistrationResponseJSON
    /// with its clientExtensionResults, WebAuthn L3 §5.1) describes, made by the key at
    /// `deviceURI`; read by ``PublicKeyCredentialJSON``.
    public static func registration(
        responseJSON json: String, deviceURI: String
    ) throws(SecurityKeyDaemonClientError) -> SecurityKeyCredentialRegistration {
        do throws(WebAuthnJSONError) {
            return try PublicKeyCredentialJSON.registration(reading: Array(json.utf8), deviceURI: deviceURI)
        } catch {
            throw malformed(error)
        }
    }

    /// The assertion a daemon's GetCredential response JSON (an AuthenticationResponseJSON with
    /// its clientExtensionResults, WebAuthn L3 §5.1) describes, made by the key at `deviceURI`;
    /// read by ``PublicKeyCredentialJSON``.
    public static func assertion(
        responseJSON json: String, deviceURI: String
    ) throws(SecurityKeyDaemonClientError) -> SecurityKeyCredentialAssertion {
        do throws(WebAuthnJSONError) {
            return try PublicKeyCredentialJSON.assertion(reading: Array(json.utf8), deviceURI: deviceURI)
        } catch {
            throw malformed(error)
        }
    }

    static func malformed(_ error: WebAuthnJSONError) -> SecurityKeyDaemonClientError {
        SecurityKeyDaemonClientError(.malformedResponse, "securitykeyd's response is malformed: \(error.message)")
    }

    /// The accounts of a SELECT_CREDENTIAL state (a JSON array of `{id, userHandle, name,
    /// displayName}`), each with the ID string to answer SelectCredential with; nil when the
    /// list is malformed.
    public static func accounts(offeredIn list: String) -> [(id: String, account: SecurityKeyAccount)]? {
        guard case .array(let entries)? = try? JSONNode.parse(Array(list.utf8), limits: accountListLimits) else {
            return nil
        }
        var accounts: [(id: String, account: SecurityKeyAccount)] = []
        for entry in entries {
            guard case .object(let members) = entry else { return nil }
            func string(_ name: String) -> String? {
                guard case .string(let text)? = members.first(where: { $0.0 == name })?.1 else { return nil }
                return text
            }
            guard let id = string("id"), let credentialID = Base64URL.decode(id) else { return nil }
            let userID = string("userHandle").flatMap(Base64URL.decode) ?? []
            accounts.append(
                (
                    id,
                    SecurityKeyAccount(
                        userID: userID, name: string("name"), displayName: string("displayName"),
                        credentialID: credentialID)
                ))
        }
        return accounts
    }

    /// An account list: 1 MiB at most, as before; an entry's members are one level down.
    static let accountListLimits = JSONLimits(
        maximumBytes: 1 << 20, maximumDepth: 8, maximumStringBytes: 1 << 20, maximumElements: 4096)
}
