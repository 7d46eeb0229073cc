import CTAP2
import Crypto
import SecurityKeys

/// The daemon's `clientExtensionResults` read back into the typed outputs, so a ceremony through
/// securitykeyd yields what a direct one does. The answer is hostile until checked: every
/// member is type-checked, and a wrong type is a `malformed-response` error naming it.
extension SecurityKeyDaemonClient {
    /// Fills the registration's extension outputs from the daemon's `clientExtensionResults`
    /// and from the authenticator data inside its attestation object.
    static func applyOutputs(
        _ object: [String: Any], to registration: inout SecurityKeyCredentialRegistration
    ) throws(SecurityKeyDaemonClientError) {
        let attestation: AttestationObject
        do { attestation = try AttestationObject(cbor: registration.rawAttestationObject) } catch {
            throw malformed("has an attestation object that does not parse")
        }
        do { registration.authenticatorExtensionOutputs = try attestation.authData.extensionOutputs() } catch {
            throw malformed("has authenticator extension outputs that do not parse")
        }
        guard let results = try optionalObject(object, "clientExtensionResults") else { return }
        if let prf = try optionalObject(results, "prf") {
            let enabled = try optional(prf, "enabled", as: Bool.self, path: "prf.enabled") ?? false
            let (first, second) = try prfResults(prf)
            registration.prf = SecurityKeyPRFRegistrationOutput(isSupported: enabled, first: first, second: second)
        }
        registration.hmacCreateSecret = try optional(results, "hmacCreateSecret", as: Bool.self, path: "hmacCreateSecret")
        if let properties = try optionalObject(results, "credProps") {
            registration.credentialProperties = SecurityKeyCredentialProperties(
                residentKey: try optional(properties, "rk", as: Bool.self, path: "credProps.rk"))
        }
        registration.credentialBlobStored = try optional(results, "credBlob", as: Bool.self, path: "credBlob")
        registration.appIDExclude = try optional(results, "appidExclude", as: Bool.self, path: "appidExclude")
        if let largeBlob = try optionalObject(results, "largeBlob") {
            registration.largeBlob = SecurityKeyLargeBlobRegistrationOutput(
                isSupported: try optional(largeBlob, "supported", as: Bool.self, path: "largeBlob.supported") ?? false)
        }
    }

    /// Fills the assertion's extension outputs from the daemon's `clientExtensionResults`.
    static func applyOutputs(
        _ object: [String: Any], to assertion: inout SecurityKeyCredentialAssertion
    ) throws(SecurityKeyDaemonClientError) {
        guard let results = try optionalObject(object, "clientExtensionResults") else { return }
        assertion.appID = try optional(results, "appid", as: Bool.self, path: "appid") ?? false
        if let prf = try optionalObject(results, "prf") {
            let (first, second) = try prfResults(prf)
            if let first { assertion.prf = SecurityKeyPRFAssertionOutput(first: first, second: second) }
        }
        if results["getCredBlob"] != nil { assertion.credentialBlob = try bytes(results, "getCredBlob") }
        if let largeBlob = try optionalObject(results, "largeBlob") {
            var blob: [UInt8]?
            if largeBlob["blob"] != nil { blob = try bytes(largeBlob, "blob") }
            assertion.largeBlob = SecurityKeyLargeBlobAssertionOutput(
                readData: blob, didWrite: try optional(largeBlob, "written", as: Bool.self, path: "largeBlob.written"))
        }
    }

    /// `prf.results.first` and `.second` (32-byte PRF outputs, base64url), when present.
    static func prfResults(_ prf: [String: Any]) throws(SecurityKeyDaemonClientError) -> (SymmetricKey?, SymmetricKey?) {
        guard let results = try optionalObject(prf, "results") else { return (nil, nil) }
        var first = try bytes(results, "first")
        defer { first.wipe() }
        guard first.count == 32 else { throw malformed("has a prf.results.first that is not 32 bytes") }
        var second: SymmetricKey?
        if results["second"] != nil {
            var bytes = try bytes(results, "second")
            defer { bytes.wipe() }
            guard bytes.count == 32 else { throw malformed("has a prf.results.second that is not 32 bytes") }
            second = SymmetricKey(data: bytes)
        }
        return (SymmetricKey(data: first), second)
    }

    static func optionalObject(
        _ object: [String: Any], _ key: String
    ) throws(SecurityKeyDaemonClientError) -> [String: Any]? {
        guard let value = object[key] else { return nil }
        guard let members = value as? [String: Any] else { throw malformed("has a \(key) that is not an object") }
        return members
    }

    static func optional<T>(
        _ object: [String: Any], _ key: String, as: T.Type, path: String
    ) throws(SecurityKeyDaemonClientError) -> T? {
        guard let value = object[key] else { return nil }
        guard let typed = value as? T else { throw malformed("has a \(path) of the wrong type") }
        return typed
    }
}
