import CTAP2
import Crypto
import SecurityKeys

/// The extensions of a ceremony routed through securitykeyd: the typed inputs written as the
/// WebAuthn JSON `extensions` member the daemon parses (WebAuthn L3 §5.1.8–9,
/// `AuthenticationExtensionsClientInputsJSON`), and the daemon's `clientExtensionResults` read
/// back into the typed outputs, so `--via-daemon` prints what a direct run prints.
///
/// The daemon's answer is hostile until checked: every member is type-checked, and a wrong type
/// is a `malformed-response` error naming it.
extension SecurityKeyDaemonClient {
    // MARK: Inputs

    /// The `extensions` member for a registration; nil when the request has none.
    static func extensionsJSON(
        _ request: SecurityKeyCredentialRegistrationRequest
    ) throws(SecurityKeyDaemonClientError) -> [String: Any]? {
        try refuseRawExtensions(request.additionalExtensionInputs.isEmpty)
        var out: [String: Any] = [:]
        if request.credentialProperties { out["credProps"] = true }
        if request.hmacCreateSecret { out["hmacCreateSecret"] = true }
        if request.minimumPINLength { out["minPinLength"] = true }
        if let blob = request.credentialBlob { out["credBlob"] = Base64URL.encode(blob) }
        if let protection = request.credentialProtection {
            out["credentialProtectionPolicy"] = protection.policy.rawValue
            out["enforceCredentialProtectionPolicy"] = protection.isEnforced
        }
        if let appID = request.appIDExclude { out["appidExclude"] = appID }
        if let prf = request.prf {
            out["prf"] = prf.inputValues.map { ["eval": values($0)] } ?? [String: Any]()
        }
        if let largeBlob = request.largeBlob { out["largeBlob"] = ["support": largeBlob.supportRequirement.rawValue] }
        return out.isEmpty ? nil : out
    }

    /// The `extensions` member for a sign-in; nil when the request has none.
    static func extensionsJSON(
        _ request: SecurityKeyCredentialAssertionRequest
    ) throws(SecurityKeyDaemonClientError) -> [String: Any]? {
        try refuseRawExtensions(request.additionalExtensionInputs.isEmpty)
        guard request.hmacGetSecret == nil else {
            throw SecurityKeyDaemonClientError(
                .notExpressible, "Raw hmac-secret salts have no WebAuthn JSON form; use the prf extension.",
                reason: .hmacSecretSalts)
        }
        var out: [String: Any] = [:]
        if let appID = request.appID { out["appid"] = appID }
        if request.getCredentialBlob { out["getCredBlob"] = true }
        if let prf = request.prf {
            var entry: [String: Any] = [:]
            if let eval = prf.inputValues { entry["eval"] = values(eval) }
            if let byCredential = prf.perCredentialInputValues {
                var map: [String: Any] = [:]
                for (id, input) in byCredential { map[Base64URL.encode(id)] = values(input) }
                entry["evalByCredential"] = map
            }
            out["prf"] = entry
        }
        switch request.largeBlob {
        case .read: out["largeBlob"] = ["read": true]
        case .write(let data): out["largeBlob"] = ["write": Base64URL.encode(data)]
        case nil: break
        }
        return out.isEmpty ? nil : out
    }

    /// Extension inputs given as raw CBOR have no WebAuthn JSON form.
    static func refuseRawExtensions(_ none: Bool) throws(SecurityKeyDaemonClientError) {
        guard none else {
            throw SecurityKeyDaemonClientError(
                .notExpressible, "Extension inputs given as raw CBOR have no WebAuthn JSON form.",
                reason: .rawExtensionInputs)
        }
    }

    static func values(_ input: SecurityKeyPRFAssertionInput.InputValues) -> [String: Any] {
        var entry = ["first": Base64URL.encode(input.saltInput1)]
        if let second = input.saltInput2 { entry["second"] = Base64URL.encode(second) }
        return entry
    }

    // MARK: Outputs

    /// Fills the registration's extension outputs from the daemon's `clientExtensionResults`
    /// and from the authenticator data inside its attestation object.
    static func applyOutputs(_ object: [String: Any], to registration: inout SecurityKeyCredentialRegistration) throws(SecurityKeyDaemonClientError) {
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
    static func applyOutputs(_ object: [String: Any], to assertion: inout SecurityKeyCredentialAssertion) throws(SecurityKeyDaemonClientError) {
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

    static func optionalObject(_ object: [String: Any], _ key: String) throws(SecurityKeyDaemonClientError) -> [String: Any]? {
        guard let value = object[key] else { return nil }
        guard let members = value as? [String: Any] else { throw malformed("has a \(key) that is not an object") }
        return members
    }

    static func optional<T>(_ object: [String: Any], _ key: String, as: T.Type, path: String) throws(SecurityKeyDaemonClientError) -> T? {
        guard let value = object[key] else { return nil }
        guard let typed = value as? T else { throw malformed("has a \(path) of the wrong type") }
        return typed
    }
}
