import _SecurityKeyInternals
import Foundation
import SecurityKeys

/// The daemon's answers, hostile until checked: the response JSON of CreateCredential and
/// GetCredential, and the account list of a SELECT_CREDENTIAL state.
extension SecurityKeyDaemonClient {
    /// The registration a daemon's CreateCredential response JSON (a RegistrationResponseJSON
    /// with its clientExtensionResults, WebAuthn L3 §5.1) describes, made by the key at `deviceURI`.
    public static func registration(
        responseJSON json: String, deviceURI: String
    ) throws(SecurityKeyDaemonClientError) -> SecurityKeyCredentialRegistration {
        let object = try parse(json)
        let response = try member(object, "response") as [String: Any]
        let transports = (response["transports"] as? [String] ?? []).map(SecurityKeyTransport.init(rawValue:))
        var registration = SecurityKeyCredentialRegistration(
            credentialID: try bytes(object, "rawId"),
            rawAttestationObject: try bytes(response, "attestationObject"),
            rawClientDataJSON: try bytes(response, "clientDataJSON"), transports: transports,
            deviceURI: deviceURI)
        try applyOutputs(object, to: &registration)
        return registration
    }

    /// The assertion a daemon's GetCredential response JSON (an AuthenticationResponseJSON with
    /// its clientExtensionResults, WebAuthn L3 §5.1) describes, made by the key at `deviceURI`.
    public static func assertion(
        responseJSON json: String, deviceURI: String
    ) throws(SecurityKeyDaemonClientError) -> SecurityKeyCredentialAssertion {
        let object = try parse(json)
        let response = try member(object, "response") as [String: Any]
        var userHandle: [UInt8]?
        if response["userHandle"] is String { userHandle = try bytes(response, "userHandle") }
        var assertion = SecurityKeyCredentialAssertion(
            credentialID: try bytes(object, "rawId"),
            rawAuthenticatorData: try bytes(response, "authenticatorData"),
            signature: try bytes(response, "signature"), userID: userHandle,
            rawClientDataJSON: try bytes(response, "clientDataJSON"), appID: false,
            deviceURI: deviceURI)
        try applyOutputs(object, to: &assertion)
        return assertion
    }

    static func malformed(_ what: String) -> SecurityKeyDaemonClientError {
        SecurityKeyDaemonClientError(.malformedResponse, "securitykeyd's response \(what).")
    }

    static func parse(_ json: String) throws(SecurityKeyDaemonClientError) -> [String: Any] {
        guard json.utf8.count <= 1 << 20,
            let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
        else { throw malformed("is not a JSON object") }
        return object
    }

    static func member<T>(_ object: [String: Any], _ key: String) throws(SecurityKeyDaemonClientError) -> T {
        guard let value = object[key] as? T else { throw malformed("has no valid \(key)") }
        return value
    }

    static func bytes(_ object: [String: Any], _ key: String) throws(SecurityKeyDaemonClientError) -> [UInt8] {
        guard let text = object[key] as? String, let bytes = Base64URL.decode(text) else {
            throw malformed("has no base64url \(key)")
        }
        return bytes
    }

    /// The accounts of a SELECT_CREDENTIAL state (a JSON array of `{id, userHandle, name,
    /// displayName}`), each with the ID string to answer SelectCredential with; nil when the
    /// list is malformed.
    public static func accounts(offeredIn list: String) -> [(id: String, account: SecurityKeyAccount)]? {
        guard list.utf8.count <= 1 << 20,
            let entries = (try? JSONSerialization.jsonObject(with: Data(list.utf8))) as? [[String: Any]]
        else { return nil }
        var accounts: [(id: String, account: SecurityKeyAccount)] = []
        for entry in entries {
            guard let id = entry["id"] as? String, let credentialID = Base64URL.decode(id) else { return nil }
            let userID = (entry["userHandle"] as? String).flatMap(Base64URL.decode) ?? []
            accounts.append(
                (
                    id,
                    SecurityKeyAccount(
                        userID: userID, name: entry["name"] as? String, displayName: entry["displayName"] as? String,
                        credentialID: credentialID)
                ))
        }
        return accounts
    }
}
